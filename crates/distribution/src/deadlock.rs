//! The global deadlock detector (as Greenplum 6's): the waits on every datanode form one
//! wait-for graph, and a cycle that no datanode sees whole is broken from here.
//!
//! Each datanode's detector finds the cycles within it (`deadlock_timeout`). A cycle
//! across datanodes shows each of them only some of its edges, so a coordinator with
//! several datanodes polls them all every `POLL_INTERVAL`, merges their edges (transactions
//! are named by their GTM start timestamp, the same on every datanode) and, for each
//! cycle, ends the waits of one victim with 40P01 on every datanode. The victim is the
//! youngest transaction of the cycle (the largest start timestamp), so every coordinator
//! that looks at the same graph picks the same one.

use crate::datanodes::Datanodes;
use datanode_client::{DatanodeClient, Timestamp};
use futures::future::join_all;
use pgerror::PgResult;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// How often the datanodes' edges are polled. An edge counts once two consecutive polls
/// saw it (a wait that already ended must not make a victim), so a cycle is broken
/// within about two intervals of closing.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// A wait-for edge: (waiting transaction, blocking transaction), by start timestamp.
type Edge = (Timestamp, Timestamp);

/// Wait-for graph: each waiting transaction's blockers. Ordered, so that the cycles found
/// and the victims chosen depend on the edges alone.
type Graph = BTreeMap<Timestamp, BTreeSet<Timestamp>>;

impl Datanodes {
    /// The wait-for edges of every datanode, merged (pg_locks): (waiting transaction,
    /// blocking transaction) by start timestamp, each once, in order.
    pub async fn wait_for_edges(&self) -> PgResult<Vec<Edge>> {
        let mut all = BTreeSet::new();
        for edges in join_all(self.nodes.iter().map(DatanodeClient::wait_for_edges)).await {
            all.extend(edges?);
        }
        Ok(all.into_iter().collect())
    }

    /// Starts the global deadlock detector on the current tokio runtime if there are
    /// several datanodes (one datanode's own detector sees every cycle). It stops once
    /// `self` is dropped.
    pub fn start_deadlock_detector(self: &Arc<Self>) {
        if self.len() < 2 {
            return;
        }
        let datanodes = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut previous = HashSet::new();
            let mut tick = tokio::time::interval(POLL_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(datanodes) = datanodes.upgrade() else {
                    return;
                };
                previous = detect_round(&datanodes.nodes, &previous).await;
            }
        });
    }
}

/// One poll: gathers every datanode's edges, breaks the cycles formed by edges that the
/// previous poll (`previous`) saw too, and returns this poll's edges.
async fn detect_round(nodes: &[DatanodeClient], previous: &HashSet<Edge>) -> HashSet<Edge> {
    let polled = join_all(nodes.iter().map(|dn| dn.wait_for_edges())).await;
    let per_node: Vec<HashSet<Edge>> = polled
        .into_iter()
        .enumerate()
        .filter_map(|(i, r)| match r {
            Ok(edges) => Some(edges.into_iter().collect()),
            Err(e) => {
                tracing::debug!("deadlock detector: datanode {i} skipped this round: {e}");
                None
            }
        })
        .collect();
    let seen: HashSet<Edge> = per_node.iter().flatten().copied().collect();
    let confirmed = seen.iter().filter(|e| previous.contains(e)).copied();
    // A cycle whose edges one datanode holds all of is that datanode's to break.
    let is_local = |cycle: &[Timestamp]| {
        per_node
            .iter()
            .any(|edges| cycle_edges(cycle).all(|e| edges.contains(&e)))
    };
    for (victim, cycle) in victims(graph(confirmed), is_local) {
        let detail = describe(&cycle);
        tracing::info!("deadlock across datanodes; transaction {victim} is the victim:\n{detail}");
        let cancels = nodes
            .iter()
            .map(|dn| dn.cancel_waits_of(victim, detail.clone()));
        for (i, r) in join_all(cancels).await.into_iter().enumerate() {
            if let Err(e) = r {
                tracing::debug!("deadlock detector: cancel on datanode {i} failed: {e}");
            }
        }
    }
    seen
}

fn graph(edges: impl IntoIterator<Item = Edge>) -> Graph {
    let mut g = Graph::new();
    for (waiter, blocker) in edges {
        g.entry(waiter).or_default().insert(blocker);
    }
    g
}

/// The edges of `cycle` (each member waits for the next, the last for the first).
fn cycle_edges(cycle: &[Timestamp]) -> impl Iterator<Item = Edge> + '_ {
    let next = cycle.iter().cycle().skip(1);
    cycle.iter().copied().zip(next.copied())
}

/// Some cycle of `g`, as its members in wait order, if it has one: an iterative
/// depth-first search (the graph's size is the number of waiting transactions).
fn find_cycle(g: &Graph) -> Option<Vec<Timestamp>> {
    const NONE: &BTreeSet<Timestamp> = &BTreeSet::new();
    let blockers = |t: Timestamp| g.get(&t).unwrap_or(NONE).iter();
    // true: on the current path; false: fully explored, on no cycle.
    let mut on_path: HashMap<Timestamp, bool> = HashMap::new();
    for &root in g.keys() {
        if on_path.contains_key(&root) {
            continue;
        }
        on_path.insert(root, true);
        let mut path = vec![(root, blockers(root))];
        while let Some((t, next)) = path.last_mut() {
            let t = *t;
            match next.next().copied() {
                None => {
                    on_path.insert(t, false);
                    path.pop();
                }
                Some(b) => match on_path.get(&b) {
                    Some(true) => {
                        let start = path.iter().position(|(p, _)| *p == b).unwrap_or(0);
                        return Some(path[start..].iter().map(|(p, _)| *p).collect());
                    }
                    Some(false) => {}
                    None => {
                        on_path.insert(b, true);
                        path.push((b, blockers(b)));
                    }
                },
            }
        }
    }
    None
}

/// The victim of each cycle of `g` with its cycle, starting at the victim: the youngest
/// member (largest start timestamp), which then leaves the graph, until no cycle is left.
/// A cycle `is_local` says a datanode sees whole gets no victim here (that datanode's
/// detector picks one): one of its edges is dropped instead.
fn victims(
    mut g: Graph,
    is_local: impl Fn(&[Timestamp]) -> bool,
) -> Vec<(Timestamp, Vec<Timestamp>)> {
    let mut out = Vec::new();
    while let Some(mut cycle) = find_cycle(&g) {
        let (at, &youngest) = cycle
            .iter()
            .enumerate()
            .max_by_key(|(_, t)| **t)
            .expect("a cycle has members");
        cycle.rotate_left(at);
        if is_local(&cycle) {
            let next = cycle.get(1).copied().unwrap_or(youngest);
            if let Some(blockers) = g.get_mut(&youngest) {
                blockers.remove(&next);
            }
            continue;
        }
        g.remove(&youngest);
        for blockers in g.values_mut() {
            blockers.remove(&youngest);
        }
        out.push((youngest, cycle));
    }
    out
}

/// The 40P01 detail for the victim of `cycle`.
fn describe(cycle: &[Timestamp]) -> String {
    cycle_edges(cycle)
        .map(|(t, b)| {
            format!("Transaction {t} waits for a lock held by transaction {b} (across datanodes).")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn never_local(_: &[Timestamp]) -> bool {
        false
    }

    #[test]
    fn no_cycle_no_victim() {
        let g = graph([(1, 2), (2, 3), (1, 3), (4, 3)]);
        assert_eq!(find_cycle(&g), None);
        assert!(victims(g, never_local).is_empty());
    }

    #[test]
    fn two_transaction_cycle_picks_the_youngest() {
        let g = graph([(5, 9), (9, 5), (7, 5)]);
        assert_eq!(victims(g, never_local), vec![(9, vec![9, 5])]);
    }

    #[test]
    fn three_transaction_cycle_behind_a_tail() {
        // 1 waits for the cycle 2 -> 3 -> 4 -> 2 without being on it
        let g = graph([(1, 2), (2, 3), (3, 4), (4, 2)]);
        let mut found = find_cycle(&g).unwrap();
        found.sort();
        assert_eq!(found, vec![2, 3, 4]);
        assert_eq!(victims(g, never_local), vec![(4, vec![4, 2, 3])]);
    }

    #[test]
    fn each_cycle_has_one_victim_and_shared_members_count_once() {
        // two cycles through 10: {10, 20} and {10, 30}; 30 and 20 are the victims
        let g = graph([(10, 20), (20, 10), (10, 30), (30, 10)]);
        let mut v: Vec<Timestamp> = victims(g.clone(), never_local)
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        v.sort();
        assert_eq!(v, vec![20, 30]);
        // one cycle with a chord: removing its youngest breaks both loops
        let g = graph([(1, 2), (2, 3), (3, 1), (2, 1)]);
        assert_eq!(victims(g, never_local).len(), 1);
    }

    #[test]
    fn the_choice_does_not_depend_on_edge_order() {
        let edges = [(3, 8), (8, 6), (6, 3), (2, 8)];
        let mut reversed = edges;
        reversed.reverse();
        assert_eq!(
            victims(graph(edges), never_local),
            victims(graph(reversed), never_local)
        );
    }

    #[test]
    fn a_cycle_one_datanode_sees_whole_is_left_to_it() {
        let local: HashSet<Edge> = [(1, 2), (2, 1)].into_iter().collect();
        let is_local = |c: &[Timestamp]| cycle_edges(c).all(|e| local.contains(&e));
        // the local cycle {1, 2} and a cross-datanode one {3, 4}
        let g = graph([(1, 2), (2, 1), (3, 4), (4, 3)]);
        assert_eq!(victims(g, is_local), vec![(4, vec![4, 3])]);
    }

    #[test]
    fn cycle_edges_close_the_loop() {
        let edges: Vec<Edge> = cycle_edges(&[4, 2, 3]).collect();
        assert_eq!(edges, vec![(4, 2), (2, 3), (3, 4)]);
        assert_eq!(
            describe(&[9, 5]),
            "Transaction 9 waits for a lock held by transaction 5 (across datanodes).\n\
             Transaction 5 waits for a lock held by transaction 9 (across datanodes)."
        );
    }
}
