//! One level of a server's address space for `GET .../browse`: the forward hierarchical
//! references of a node (the Objects folder by default), each child with its classes, data
//! type, access level and whether it has children of its own, in a short-lived session.

use crate::connectors::kind::{BrowseEntry, Failure, FailureKind, Target};
use crate::connectors::opcua::address::parse_node_id;
use crate::connectors::opcua::convert::{qualified_name, status_name};
use crate::connectors::opcua::failure::from_status;
use crate::connectors::opcua::nodes::read_id;
use crate::connectors::opcua::session::connect;
use crate::connectors::opcua::settings::Settings;
use opcua::client::Session;
use opcua::types::{
    AttributeId, BrowseDescription, BrowseDirection, BrowseResult, BrowseResultMask, NodeClass,
    NodeId, ObjectId, ReferenceDescription, ReferenceTypeId, TimestampsToReturn, Variant,
    VariantScalarTypeId,
};
use std::collections::HashMap;

/// Browses one level under `node` (`i=85`, the Objects folder, by default).
pub async fn browse(target: &Target, node: Option<&str>) -> Result<Vec<BrowseEntry>, Failure> {
    let settings =
        Settings::read(&target.settings).map_err(|e| Failure::new(FailureKind::Protocol, e))?;
    let start = match node {
        Some(text) => parse_node_id(text).map_err(|e| Failure::new(FailureKind::Protocol, e))?,
        None => ObjectId::ObjectsFolder.into(),
    };
    let connection = connect(target, &settings).await?;
    let within = settings.timeout * 3;
    let entries = tokio::time::timeout(within, level(&connection.session, &start))
        .await
        .map_err(|_| {
            Failure::new(
                FailureKind::Timeout,
                "the server did not answer the browse in time",
            )
        })?;
    drop(connection);
    entries
}

fn description(node: &NodeId, max_class_mask: u32) -> BrowseDescription {
    BrowseDescription {
        node_id: node.clone(),
        browse_direction: BrowseDirection::Forward,
        reference_type_id: ReferenceTypeId::HierarchicalReferences.into(),
        include_subtypes: true,
        node_class_mask: max_class_mask,
        result_mask: BrowseResultMask::All as u32,
    }
}

async fn references(
    session: &Session,
    node: &NodeId,
) -> Result<Vec<ReferenceDescription>, Failure> {
    let results = session
        .browse(&[description(node, 0)], 1000, None)
        .await
        .map_err(|e| from_status(e.status(), "browsing"))?;
    let mut out = Vec::new();
    let mut result: Option<BrowseResult> = results.into_iter().next();
    for _ in 0..100 {
        let Some(r) = result.take() else { break };
        if r.status_code.is_bad() {
            return Err(Failure::new(
                FailureKind::Protocol,
                format!(
                    "the server cannot browse {node} ({})",
                    status_name(r.status_code)
                ),
            )
            .with_status(status_name(r.status_code)));
        }
        out.extend(r.references.unwrap_or_default());
        if r.continuation_point.is_null_or_empty() {
            break;
        }
        result = session
            .browse_next(false, &[r.continuation_point])
            .await
            .map_err(|e| from_status(e.status(), "browsing"))?
            .into_iter()
            .next();
    }
    Ok(out)
}

async fn level(session: &Session, start: &NodeId) -> Result<Vec<BrowseEntry>, Failure> {
    let refs: Vec<ReferenceDescription> = references(session, start)
        .await?
        .into_iter()
        .filter(|r| r.node_id.server_index == 0)
        .collect();
    if refs.is_empty() {
        return Ok(Vec::new());
    }
    // Whether each child has children: one reference each is enough.
    let children: Vec<BrowseDescription> = refs
        .iter()
        .map(|r| description(&r.node_id.node_id, 0))
        .collect();
    let has_children: Vec<bool> = session
        .browse(&children, 1, None)
        .await
        .map(|results| {
            results
                .iter()
                .map(|r| r.references.as_ref().is_some_and(|v| !v.is_empty()))
                .collect()
        })
        .unwrap_or_else(|_| vec![false; refs.len()]);
    // Data type and access level of the variables.
    let variables: Vec<usize> = (0..refs.len())
        .filter(|&i| refs[i].node_class == NodeClass::Variable)
        .collect();
    let mut reads = Vec::new();
    for &i in &variables {
        reads.push(read_id(&refs[i].node_id.node_id, AttributeId::DataType));
        reads.push(read_id(
            &refs[i].node_id.node_id,
            AttributeId::UserAccessLevel,
        ));
    }
    let attributes = if reads.is_empty() {
        Vec::new()
    } else {
        session
            .read(&reads, TimestampsToReturn::Neither, 0.0)
            .await
            .unwrap_or_default()
    };
    let mut data_types: HashMap<usize, NodeId> = HashMap::new();
    let mut access: HashMap<usize, String> = HashMap::new();
    for (k, &i) in variables.iter().enumerate() {
        if let Some(Variant::NodeId(id)) = attributes.get(2 * k).and_then(|v| v.value.clone()) {
            data_types.insert(i, *id);
        }
        if let Some(Variant::Byte(level)) = attributes.get(2 * k + 1).and_then(|v| v.value.clone())
        {
            let text = match (level & 1 != 0, level & 2 != 0) {
                (true, true) => "read-write",
                (true, false) => "read",
                (false, true) => "write",
                (false, false) => "none",
            };
            access.insert(i, text.to_string());
        }
    }
    let type_names = type_names(session, data_types.values()).await;
    Ok(refs
        .iter()
        .enumerate()
        .map(|(i, r)| BrowseEntry {
            node_id: r.node_id.node_id.to_string(),
            browse_name: qualified_name(&r.browse_name),
            display_name: r.display_name.text.as_ref().to_string(),
            node_class: format!("{:?}", r.node_class),
            data_type: data_types.get(&i).map(|id| {
                type_names
                    .get(id)
                    .cloned()
                    .unwrap_or_else(|| id.to_string())
            }),
            access_level: access.get(&i).cloned(),
            has_children: has_children.get(i).copied().unwrap_or(false),
        })
        .collect())
}

/// The names of data types: built-in ones by their name, the others by their browse name.
async fn type_names<'a>(
    session: &Session,
    ids: impl Iterator<Item = &'a NodeId>,
) -> HashMap<NodeId, String> {
    let mut names = HashMap::new();
    let mut unknown = Vec::new();
    for id in ids {
        if names.contains_key(id) || unknown.contains(id) {
            continue;
        }
        match VariantScalarTypeId::try_from(id) {
            Ok(t) => {
                names.insert(id.clone(), t.to_string());
            }
            Err(_) => unknown.push(id.clone()),
        }
    }
    if unknown.is_empty() {
        return names;
    }
    let reads: Vec<_> = unknown
        .iter()
        .map(|id| read_id(id, AttributeId::BrowseName))
        .collect();
    if let Ok(values) = session.read(&reads, TimestampsToReturn::Neither, 0.0).await {
        for (id, value) in unknown.into_iter().zip(values) {
            if let Some(Variant::QualifiedName(q)) = value.value {
                names.insert(id, q.name.as_ref().to_string());
            }
        }
    }
    names
}
