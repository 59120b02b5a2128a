//! The cluster's nodes as this coordinator sees them: the rows of `meridian_nodes`.

use datanode_client::ScanTraffic;
use distribution::Datanodes;
use gtm::GtmClient;
use meta::nodes::{Node, Role};
use std::sync::Arc;

pub struct ClusterView {
    /// The GTM's address; None: in this process.
    pub gtm_address: Option<String>,
    pub gtm: GtmClient,
    pub datanodes: Arc<Datanodes>,
    /// The datanodes rows are spread over, in `datanodes`' order; empty: one datanode in
    /// this process.
    pub members: Vec<Node>,
    /// Where this coordinator accepts sessions.
    pub own_address: String,
}

/// One node: name, role, address, state, and for a datanode of the cluster the pages this
/// coordinator's scans fetched from it and the rows (or partial-aggregate groups) they
/// brought (what pushed filters and aggregates save shows here, decision 0033).
pub type NodeRow = ([String; 4], Option<ScanTraffic>);

impl ClusterView {
    /// Every node: the GTM, the datanodes (the bucket map's, then any registered since),
    /// the coordinators. A datanode's or the GTM's state is whether this coordinator's
    /// connection to it is up; another coordinator's is only that it registered.
    pub fn rows(&self, registered: &[Node]) -> Vec<NodeRow> {
        let up = |connected: bool| if connected { "up" } else { "down" }.to_string();
        let mut rows = vec![(
            [
                "gtm".to_string(),
                "gtm".to_string(),
                self.gtm_address
                    .clone()
                    .unwrap_or_else(|| "in process".into()),
                up(self.gtm.is_connected()),
            ],
            None,
        )];
        if self.members.is_empty() {
            rows.push(row("datanode", Role::Datanode, "in process", "up"));
        }
        let traffic = self.datanodes.scan_traffic();
        for ((node, connected), traffic) in self
            .members
            .iter()
            .zip(self.datanodes.connected())
            .zip(traffic)
        {
            let (fields, _) = datanode_row(node, &up(connected));
            rows.push((fields, traffic));
        }
        for node in registered.iter().filter(|n| n.role == Role::Datanode) {
            if !self.members.iter().any(|m| m.id == node.id) {
                rows.push(datanode_row(node, "not in the bucket map"));
            }
        }
        rows.push(coordinator_row(&self.own_address, "up (this node)"));
        for node in registered.iter().filter(|n| n.role == Role::Coordinator) {
            if node.address != self.own_address {
                rows.push(coordinator_row(&node.address, "registered"));
            }
        }
        rows
    }
}

fn datanode_row(node: &Node, state: &str) -> NodeRow {
    row(
        &format!("datanode{}", node.id),
        Role::Datanode,
        &node.address,
        state,
    )
}

/// Coordinators hold no data and have no id: they are named by their address.
fn coordinator_row(address: &str, state: &str) -> NodeRow {
    row(
        &format!("coordinator@{address}"),
        Role::Coordinator,
        address,
        state,
    )
}

fn row(name: &str, role: Role, address: &str, state: &str) -> NodeRow {
    (
        [
            name.to_string(),
            role.name().to_string(),
            address.to_string(),
            state.to_string(),
        ],
        None,
    )
}
