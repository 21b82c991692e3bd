//! Namespaces beyond their record routes (the `namespaces` system table is written through
//! `/svc/namespaces` like any table): `GET /svc/namespaces/tree`, a domain's branch of the
//! Unified Namespace as nested folders with each tag's settings and last value, so a console
//! or the TUI can draw it without subscribing to `#`.

use crate::model::{TreeFolder, TreeTag};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::services::namespace_index::check_path;
use crate::server::services::system_tables::TAGS_FEATURE;
use crate::server::AppState;
use crate::store::TagRow;
use axum::extract::{Query, State};
use axum::Json;
use serde::Deserialize;
use std::collections::BTreeMap;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(tree))
}

#[derive(Deserialize)]
struct TreeQuery {
    path: Option<String>,
    depth: Option<String>,
}

/// The branch at `path` (the whole domain without it), `depth` folder levels deep (all
/// without it). Needs `tags` read access: it shows the domain's tags.
#[utoipa::path(get, path = "/svc/namespaces/tree", tag = "tags",
    params(("path" = Option<String>, Query, description = "The folder to start at (default: the root)"),
        ("depth" = Option<String>, Query, pattern = "^[0-9]{1,4}$", description = "How many levels to include")),
    responses((status = 200, description = "The folder with its tags and folders", body = TreeFolder)))]
async fn tree(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<TreeQuery>,
) -> ApiResult<Json<TreeFolder>> {
    caller
        .require(&state, TAGS_FEATURE, "*", Access::Read)
        .await?;
    let root = query.path.unwrap_or_default();
    if !root.is_empty() {
        check_path(&root)
            .map_err(|e| ApiError::bad_request(e.replace("field `path`", "`path`")))?;
    }
    let depth = match query.depth.as_deref() {
        None => usize::MAX,
        Some(text) => text.parse::<usize>().map_err(|_| {
            ApiError::bad_request(format!(
                "`depth` must be a whole number of levels, not `{text}`"
            ))
        })?,
    };
    let tags = state.uns.tags.tags(&caller.domain);
    let mut builder = Builder::default();
    for tag in &tags {
        let relative = if root.is_empty() {
            Some(tag.path.as_str())
        } else {
            tag.path
                .strip_prefix(root.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
        };
        if let Some(relative) = relative {
            builder.insert(relative, tag, depth);
        }
    }
    let name = root.rsplit('/').next().unwrap_or_default().to_string();
    Ok(Json(builder.build(name, root, &state)))
}

/// A folder while the tree is built: sub-folders by name, tags in path order.
#[derive(Default)]
struct Builder<'t> {
    folders: BTreeMap<String, Builder<'t>>,
    tags: Vec<(&'t str, &'t TagRow)>,
    truncated: bool,
}

impl<'t> Builder<'t> {
    /// Files `tag` under this folder at `relative` (its path below the folder).
    fn insert(&mut self, relative: &'t str, tag: &'t TagRow, depth: usize) {
        match relative.split_once('/') {
            None => self.tags.push((relative, tag)),
            Some((folder, rest)) => {
                let child = self.folders.entry(folder.to_string()).or_default();
                if depth == 0 {
                    child.truncated = true;
                } else {
                    child.insert(rest, tag, depth - 1);
                }
            }
        }
    }

    fn build(self, name: String, path: String, state: &AppState) -> TreeFolder {
        let child_path = |child: &str| {
            if path.is_empty() {
                child.to_string()
            } else {
                format!("{path}/{child}")
            }
        };
        let tags = self
            .tags
            .into_iter()
            .map(|(name, tag)| {
                let last = state.uns.last_values.get(&tag.path);
                TreeTag {
                    name: name.to_string(),
                    path: tag.path.clone(),
                    historize: tag.historize,
                    unit: tag.unit.clone(),
                    timestamp: last
                        .as_ref()
                        .map(|(ts, _)| crate::historian::format_ms(*ts)),
                    value: last.map(|(_, value)| value),
                }
            })
            .collect();
        let folders = self
            .folders
            .into_iter()
            .map(|(name, folder)| {
                let path = child_path(&name);
                folder.build(name, path, state)
            })
            .collect();
        TreeFolder {
            name,
            path,
            folders,
            tags,
            truncated: self.truncated,
        }
    }
}
