//! What a connect learns from the server's address space: the node of each point (browse
//! paths resolved with TranslateBrowsePathsToNodeIds), the type each writable point takes
//! (DataType, ValueRank and the current value's type), the server's structure definitions
//! (so extension objects of its own types decode), and the server's description.

use crate::connectors::opcua::address::Node;
use crate::connectors::opcua::convert::{object, status_name, WriteType};
use opcua::client::custom_types::DataTypeTreeBuilder;
use opcua::client::Session;
use opcua::types::custom::DynamicTypeLoader;
use opcua::types::{
    AttributeId, BrowsePath, DataValue, EndpointDescription, NodeId, ObjectId, QualifiedName,
    ReadValueId, ReferenceTypeId, RelativePath, RelativePathElement, ServerStatusDataType,
    TimestampsToReturn, VariableId, Variant, VariantScalarTypeId,
};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// A read of `attribute` of `node`.
pub fn read_id(node: &NodeId, attribute: AttributeId) -> ReadValueId {
    ReadValueId {
        node_id: node.clone(),
        attribute_id: attribute as u32,
        index_range: Default::default(),
        data_encoding: QualifiedName::null(),
    }
}

/// The node of each point: its node id, or its browse path resolved (the status name when
/// it cannot be). `Err` of the whole call is the service's status.
pub async fn resolve(
    session: &Session,
    nodes: &[Node],
) -> Result<Vec<Result<NodeId, String>>, opcua::types::Error> {
    let mut out: Vec<Result<NodeId, String>> = Vec::with_capacity(nodes.len());
    let mut paths = Vec::new();
    let mut slots = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        match node {
            Node::Id(id) => out.push(Ok(id.clone())),
            Node::Path(steps) => {
                out.push(Err("BadNoMatch".into()));
                slots.push(i);
                paths.push(BrowsePath {
                    starting_node: ObjectId::ObjectsFolder.into(),
                    relative_path: RelativePath {
                        elements: Some(
                            steps
                                .iter()
                                .map(|(ns, name)| RelativePathElement {
                                    reference_type_id: ReferenceTypeId::HierarchicalReferences
                                        .into(),
                                    is_inverse: false,
                                    include_subtypes: true,
                                    target_name: QualifiedName::new(*ns, name.as_str()),
                                })
                                .collect(),
                        ),
                    },
                });
            }
        }
    }
    if paths.is_empty() {
        return Ok(out);
    }
    let results = session.translate_browse_paths_to_node_ids(&paths).await?;
    for (slot, result) in slots.into_iter().zip(results) {
        let target = result
            .targets
            .unwrap_or_default()
            .into_iter()
            .find(|t| t.remaining_path_index == u32::MAX);
        out[slot] = match target {
            _ if result.status_code.is_bad() => Err(status_name(result.status_code)),
            Some(t) if t.target_id.server_index == 0 => Ok(t.target_id.node_id),
            _ => Err("BadNoMatch".into()),
        };
    }
    Ok(out)
}

/// The type a write to each node takes (the status name when it cannot be known).
pub async fn write_types(
    session: &Session,
    nodes: &[NodeId],
) -> Result<Vec<Result<WriteType, String>>, opcua::types::Error> {
    if nodes.is_empty() {
        return Ok(Vec::new());
    }
    let mut reads = Vec::with_capacity(nodes.len() * 3);
    for node in nodes {
        reads.push(read_id(node, AttributeId::DataType));
        reads.push(read_id(node, AttributeId::ValueRank));
        reads.push(read_id(node, AttributeId::Value));
    }
    let values = session
        .read(&reads, TimestampsToReturn::Neither, 0.0)
        .await?;
    Ok(values.chunks(3).map(write_type).collect())
}

fn write_type(values: &[DataValue]) -> Result<WriteType, String> {
    let [data_type, rank, current] = values else {
        return Err("BadUnexpectedError".into());
    };
    for v in [data_type, rank] {
        if v.status().is_bad() {
            return Err(status_name(v.status()));
        }
    }
    let value_rank = match &rank.value {
        Some(Variant::Int32(r)) => *r,
        _ => -1,
    };
    let declared = match &data_type.value {
        Some(Variant::NodeId(id)) => VariantScalarTypeId::try_from(id.as_ref()).ok(),
        _ => None,
    };
    let declared = declared.filter(|t| {
        !matches!(
            t,
            VariantScalarTypeId::Variant | VariantScalarTypeId::ExtensionObject
        )
    });
    // A subtype (UtcTime, Duration, an enumeration) or an abstract type: the type of the
    // value the node holds now.
    let scalar = declared
        .or_else(|| current.value.as_ref().and_then(|v| v.scalar_type_id()))
        .ok_or_else(|| "BadTypeMismatch".to_string())?;
    Ok(WriteType { scalar, value_rank })
}

/// Loads the server's structure definitions, so its own structures decode (best effort).
pub async fn load_types(session: &Session, within: Duration) {
    let build = DataTypeTreeBuilder::new(|_: &NodeId| true).build(session);
    if let Ok(Ok(tree)) = tokio::time::timeout(within, build).await {
        if let Ok(namespaces) = session.read_namespace_array().await {
            session.set_namespaces(namespaces);
        }
        session.add_type_loader(Arc::new(DynamicTypeLoader::new(Arc::new(tree))));
    }
}

/// The server's application, its build info when readable, and the endpoint.
pub async fn describe(
    session: &Session,
    endpoint: &EndpointDescription,
    configured: &str,
) -> Value {
    let server = &endpoint.server;
    let policy = endpoint.security_policy_uri.as_ref();
    let mut description = object(&[
        (
            "application_name",
            json!(server.application_name.text.as_ref()),
        ),
        ("application_uri", json!(server.application_uri.as_ref())),
        ("product_uri", json!(server.product_uri.as_ref())),
        ("endpoint", json!(configured)),
        (
            "security_policy",
            json!(policy.rsplit('#').next().unwrap_or(policy)),
        ),
        (
            "security_mode",
            json!(format!("{:?}", endpoint.security_mode)),
        ),
    ]);
    let status = session
        .read(
            &[read_id(
                &VariableId::Server_ServerStatus.into(),
                AttributeId::Value,
            )],
            TimestampsToReturn::Neither,
            0.0,
        )
        .await;
    let status = status
        .ok()
        .and_then(|values| values.into_iter().next())
        .and_then(|v| v.value);
    if let Some(Variant::ExtensionObject(o)) = status {
        if let Some(status) = o.inner_as::<ServerStatusDataType>() {
            let build = &status.build_info;
            if let Value::Object(map) = &mut description {
                let pairs = [
                    ("manufacturer_name", json!(build.manufacturer_name.as_ref())),
                    ("product_name", json!(build.product_name.as_ref())),
                    ("software_version", json!(build.software_version.as_ref())),
                    ("build_number", json!(build.build_number.as_ref())),
                    ("state", json!(format!("{:?}", status.state))),
                ];
                for (key, value) in pairs {
                    if value.as_str().is_some_and(|s| !s.is_empty()) {
                        map.insert(key.into(), value);
                    }
                }
            }
        }
    }
    description
}
