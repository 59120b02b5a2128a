//! EXPLAIN: a bound statement's plan as PostgreSQL's text format prints it with
//! `COSTS OFF` (there is no cost model to print), one line per output row.
//!
//! Nodes are named after what the executor runs (`coordinator::exec`): a join with
//! equality keys is a hash join whose right side is hashed, any other a nested loop; GROUP
//! BY and DISTINCT hash. Filters show on the node below them, as PostgreSQL shows a scan's
//! or an aggregate's own filter. Where each scan's rows come from in a cluster is the
//! caller's to say (`Placement`), as lines under the scan.
//!
//! EXPLAIN ANALYZE prints what the executor measured of each `Rel` (`Measured`, by the
//! node's address) on the printed node that shows it: a Filter's and a Project's rows
//! on the scan they are printed as, the hashed side's on its Hash.

use crate::catalog::TableDef;
use crate::functions::{AggFunc, ScalarFunc};
use crate::plan::{
    Access, AggCall, Expr, IndexLookup, JoinKind, KeyValues, Query, Rel, SetOpKind, SortKey,
    Statement, SubqueryKind, WindowFunc,
};
use crate::pushdown::{PushedScan, ScanWork, StateKind};
use std::collections::HashMap;
use std::time::Duration;
use types::Value;

/// What EXPLAIN ANALYZE measured of one plan node, summed over the times it ran.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeActuals {
    /// How many times the node was opened (a nested loop's inner side once per outer row).
    pub loops: u64,
    pub rows: u64,
    /// Time to the first batch of rows, and in all.
    pub startup: Duration,
    pub total: Duration,
}

/// What EXPLAIN ANALYZE measured of a statement's run.
#[derive(Debug, Default)]
pub struct Measured {
    /// By each `Rel`'s address (`rel_key`).
    pub nodes: HashMap<usize, NodeActuals>,
    /// Rows an UPDATE or DELETE wrote: its scan, which has no `Rel`, read those.
    pub written: u64,
    /// The whole statement's execution.
    pub elapsed: Duration,
    /// Whether per-node times print (TIMING).
    pub timing: bool,
}

/// The key of `rel` in `Measured::nodes`: the plan is not moved while it runs and prints.
pub fn rel_key(rel: &Rel) -> usize {
    rel as *const Rel as usize
}

/// What a cluster adds to a scan: the lines that say which datanodes it reads (none
/// with one datanode).
pub trait Placement {
    /// The lines of a scan of `table` through `access`; `route`: the value of the
    /// distribution column that a pushed filter fixes (decision 0033).
    fn scan_lines(&self, table: &TableDef, access: &Access, route: Option<&Expr>) -> Vec<String>;
    /// The lines of a write of `table`'s rows reached through `access`.
    fn write_lines(&self, table: &TableDef, access: &Access) -> Vec<String>;
    /// The lines of an insert into `table`.
    fn insert_lines(&self, table: &TableDef) -> Vec<String>;
}

/// The plan of an explainable statement (a query, INSERT, UPDATE or DELETE), with what
/// its run measured when it ran (EXPLAIN ANALYZE).
pub fn explain(
    stmt: &Statement,
    placement: &dyn Placement,
    measured: Option<&Measured>,
) -> Vec<String> {
    let mut b = Builder {
        placement,
        subplans: 0,
        qualify: false,
        measured,
    };
    // A write's own node returns no rows; its scan read the rows it wrote.
    let whole = |rows| NodeActuals {
        loops: 1,
        rows,
        startup: Duration::ZERO,
        total: measured.map_or(Duration::ZERO, |m| m.elapsed),
    };
    let written = measured.map_or(0, |m| m.written);
    let root = match stmt {
        Statement::Query(q) => b.query(q),
        Statement::Insert(ins) => {
            b.qualify = joins(&ins.source);
            let mut node = Node::new(format!("Insert on {}", ins.table.name));
            node.props.extend(placement.insert_lines(&ins.table));
            node.children.push(b.rel(&ins.source, Vec::new()));
            node.actual = Some(whole(0));
            node
        }
        Statement::Update(upd) => {
            let names = table_columns(&upd.table, false);
            let mut node = Node::new(format!("Update on {}", upd.table.name));
            node.props
                .extend(placement.write_lines(&upd.table, &upd.access));
            let mut scan = b.scan(&upd.table, &upd.access, upd.filter.as_ref(), &names, None);
            for (_, e) in &upd.assignments {
                b.subplans_of(&mut scan, e);
            }
            scan.actual = Some(whole(written));
            node.children.push(scan);
            node.actual = Some(whole(0));
            node
        }
        Statement::Delete(del) => {
            let names = table_columns(&del.table, false);
            let mut node = Node::new(format!("Delete on {}", del.table.name));
            node.props
                .extend(placement.write_lines(&del.table, &del.access));
            let mut scan = b.scan(&del.table, &del.access, del.filter.as_ref(), &names, None);
            scan.actual = Some(whole(written));
            node.children.push(scan);
            node.actual = Some(whole(0));
            node
        }
        _ => return Vec::new(),
    };
    let mut lines = Vec::new();
    root.render(None, measured.map(|m| m.timing), &mut lines);
    lines
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One node of the printed plan.
struct Node {
    title: String,
    props: Vec<String>,
    children: Vec<Node>,
    /// The plans of the subqueries in its expressions, numbered as its props name them.
    subplans: Vec<(usize, Node)>,
    /// What EXPLAIN ANALYZE measured of it; None: it never ran.
    actual: Option<NodeActuals>,
}

impl Node {
    fn new(title: String) -> Node {
        Node {
            title,
            props: Vec::new(),
            children: Vec::new(),
            subplans: Vec::new(),
            actual: None,
        }
    }

    /// PostgreSQL's measurements after a node's title under EXPLAIN ANALYZE (`timing`:
    /// with times), per loop.
    fn actual_text(&self, timing: bool) -> String {
        let Some(a) = self.actual.filter(|a| a.loops > 0) else {
            return " (never executed)".into();
        };
        let per_loop = |v: f64| v / a.loops as f64;
        let rows = per_loop(a.rows as f64).round();
        match timing {
            true => format!(
                " (actual time={:.3}..{:.3} rows={rows} loops={})",
                per_loop(millis(a.startup)),
                per_loop(millis(a.total)),
                a.loops
            ),
            false => format!(" (actual rows={rows} loops={})", a.loops),
        }
    }

    /// PostgreSQL's layout: a child's title follows `->  ` at its parent's property
    /// column; its own properties and children start 6 columns further; a SubPlan's label
    /// sits at the property column and its plan 2 columns further.
    /// `timing`: Some under EXPLAIN ANALYZE, whether with times.
    fn render(&self, arrow: Option<usize>, timing: Option<bool>, out: &mut Vec<String>) {
        let title = match timing {
            Some(timing) => format!("{}{}", self.title, self.actual_text(timing)),
            None => self.title.clone(),
        };
        let props_at = match arrow {
            None => {
                out.push(title);
                2
            }
            Some(a) => {
                out.push(format!("{}->  {title}", " ".repeat(a)));
                a + 6
            }
        };
        let indent = " ".repeat(props_at);
        for p in &self.props {
            out.push(format!("{indent}{p}"));
        }
        for c in &self.children {
            c.render(Some(props_at), timing, out);
        }
        for (n, plan) in &self.subplans {
            out.push(format!("{indent}SubPlan {n}"));
            plan.render(Some(props_at + 2), timing, out);
        }
    }
}

struct Builder<'p> {
    placement: &'p dyn Placement,
    /// SubPlans numbered so far.
    subplans: usize,
    /// Whether columns print with their table's name (the plan joins tables).
    qualify: bool,
    /// What EXPLAIN ANALYZE measured.
    measured: Option<&'p Measured>,
}

impl Builder<'_> {
    /// `e` as a property's text; its subqueries become `node`'s next SubPlans.
    fn text(&mut self, node: &mut Node, e: &Expr, names: &[String]) -> String {
        let mut found = Vec::new();
        collect_subqueries(e, &mut found);
        // Numbered before their plans are built: those number their own subqueries.
        let first = self.subplans + 1;
        self.subplans += found.len();
        for (i, q) in found.into_iter().enumerate() {
            let plan = self.query(q);
            node.subplans.push((first + i, plan));
        }
        expr(e, names, &mut first.clone())
    }

    /// The SubPlans of `e` (an expression shown nowhere, as an UPDATE's new values).
    fn subplans_of(&mut self, node: &mut Node, e: &Expr) {
        self.text(node, e, &[]);
    }

    fn query(&mut self, q: &Query) -> Node {
        let outer = std::mem::replace(&mut self.qualify, joins(&q.root));
        let mut node = self.rel(&q.root, Vec::new());
        self.qualify = outer;
        if q.locking.is_some() {
            // The rows are locked under the LIMIT, as by PostgreSQL's LockRows.
            let lock = |locked: Node| {
                let mut lock_rows = Node::new("LockRows".into());
                lock_rows.children.push(locked);
                lock_rows
            };
            match (&q.root, node.children.pop()) {
                (Rel::Limit { .. }, Some(locked)) => {
                    let mut lock_rows = lock(locked);
                    lock_rows.actual = lock_rows.children[0].actual;
                    node.children.push(lock_rows)
                }
                (_, child) => {
                    node.children.extend(child);
                    node = lock(node);
                    node.actual = node.children[0].actual;
                }
            }
        }
        node
    }

    /// A scan node; `pushed`: what a cluster's datanodes do with its rows.
    fn scan(
        &mut self,
        table: &TableDef,
        access: &Access,
        filter: Option<&Expr>,
        names: &[String],
        pushed: Option<&PushedScan>,
    ) -> Node {
        let mut node = match access {
            Access::Full => Node::new(format!("Seq Scan on {}", table.name)),
            Access::PrimaryKey(_) | Access::PrimaryKeys { .. } | Access::KeyRange { .. } => {
                Node::new(index_scan_title(table))
            }
            Access::Index { index, .. } => Node::new(format!(
                "Index Scan using {} on {}",
                table.indexes[*index].name, table.name
            )),
        };
        let key = primary_key_columns(table, self.qualify);
        let mut conds = Vec::new();
        match access {
            Access::Full => {}
            Access::PrimaryKey(values) => {
                for (c, v) in key.iter().zip(values) {
                    let v = self.text(&mut node, v, names);
                    conds.push(format!("({c} = {v})"));
                }
            }
            Access::PrimaryKeys {
                before,
                values,
                after,
            } => {
                for (c, v) in key.iter().zip(before) {
                    let v = self.text(&mut node, v, names);
                    conds.push(format!("({c} = {v})"));
                }
                let column = &key[before.len()];
                let any = match values {
                    KeyValues::List(list) => {
                        let list: Vec<String> = list
                            .iter()
                            .map(|v| self.text(&mut node, v, names))
                            .collect();
                        format!("ARRAY[{}]", list.join(", "))
                    }
                    KeyValues::Array(array) => self.text(&mut node, array, names),
                };
                conds.push(format!("({column} = ANY ({any}))"));
                for (c, v) in key[before.len() + 1..].iter().zip(after) {
                    let v = self.text(&mut node, v, names);
                    conds.push(format!("({c} = {v})"));
                }
            }
            Access::KeyRange {
                prefix,
                lower,
                upper,
            } => {
                for (c, v) in key.iter().zip(prefix) {
                    let v = self.text(&mut node, v, names);
                    conds.push(format!("({c} = {v})"));
                }
                let column = key.get(prefix.len()).cloned().unwrap_or_default();
                for (bound, ops) in [(lower, (">=", ">")), (upper, ("<=", "<"))] {
                    if let Some(b) = bound {
                        let op = if b.inclusive { ops.0 } else { ops.1 };
                        let v = self.text(&mut node, &b.value, names);
                        conds.push(format!("({column} {op} {v})"));
                    }
                }
            }
            Access::Index { index, lookup } => {
                let all = table_columns(table, self.qualify);
                let columns: Vec<&String> = table.indexes[*index]
                    .columns
                    .iter()
                    .map(|c| &all[c.column])
                    .collect();
                match lookup {
                    IndexLookup::Prefixes(prefixes) if prefixes.len() == 1 => {
                        for (c, v) in columns.iter().zip(&prefixes[0]) {
                            let v = self.text(&mut node, v, names);
                            conds.push(format!("({c} = {v})"));
                        }
                    }
                    IndexLookup::Prefixes(prefixes) => {
                        let values: Vec<String> = prefixes
                            .iter()
                            .flatten()
                            .map(|v| self.text(&mut node, v, names))
                            .collect();
                        conds.push(format!(
                            "({} = ANY (ARRAY[{}]))",
                            columns[0],
                            values.join(", ")
                        ));
                    }
                    IndexLookup::Range { lower, upper } => {
                        for (bound, ops) in [(lower, (">=", ">")), (upper, ("<=", "<"))] {
                            if let Some(b) = bound {
                                let op = if b.inclusive { ops.0 } else { ops.1 };
                                let v = self.text(&mut node, &b.value, names);
                                conds.push(format!("({} {op} {v})", columns[0]));
                            }
                        }
                    }
                }
            }
        }
        if !conds.is_empty() {
            node.props.push(format!("Index Cond: {}", and_all(conds)));
        }
        if let Some(f) = filter {
            let f = self.text(&mut node, f, names);
            node.props.push(format!("Filter: {f}"));
        }
        if let Some(p) = pushed {
            node.props
                .extend(remote_lines(&p.work, &table_columns(table, self.qualify)));
        }
        let route = pushed.and_then(|p| p.route.as_ref());
        node.props
            .extend(self.placement.scan_lines(table, access, route));
        node
    }

    /// The node of `rel`, with `filters` (of the Filter nodes above it) as its Filter;
    /// under EXPLAIN ANALYZE, with what was measured of the topmost `Rel` it shows.
    fn rel(&mut self, rel: &Rel, filters: Vec<&Expr>) -> Node {
        let topmost = filters.is_empty();
        let mut node = self.rel_node(rel, filters);
        let Some(measured) = self.measured.filter(|_| topmost) else {
            return node;
        };
        node.actual = measured.nodes.get(&rel_key(rel)).copied();
        if let (Rel::Filter { .. }, Some(out)) = (rel, node.actual) {
            let mut unfiltered = rel;
            while let Rel::Filter { input, .. } = unfiltered {
                unfiltered = input;
            }
            let read = measured
                .nodes
                .get(&rel_key(unfiltered))
                .map_or(0, |a| a.rows);
            let removed = (read.saturating_sub(out.rows) as f64 / out.loops.max(1) as f64).round();
            if removed > 0.0 {
                let at = node.props.iter().position(|p| p.starts_with("Filter: "));
                let line = format!("Rows Removed by Filter: {removed}");
                match at {
                    Some(i) => node.props.insert(i + 1, line),
                    None => node.props.push(line),
                }
            }
        }
        node
    }

    fn rel_node(&mut self, rel: &Rel, filters: Vec<&Expr>) -> Node {
        let names = columns(rel, self.qualify);
        let mut node = match rel {
            Rel::Filter { input, predicate } => {
                let mut filters = filters;
                filters.push(predicate);
                return self.rel(input, filters);
            }
            Rel::Scan { table, access } => {
                let filter = conjunction(&filters);
                return self.scan(table, access, filter.as_ref(), &names, None);
            }
            Rel::PushedScan(p) => {
                let filter = conjunction(&filters);
                return self.scan(&p.table, &p.access, filter.as_ref(), &names, Some(p));
            }
            Rel::Project { input, exprs } => {
                if filters.is_empty() && !exprs.iter().any(Expr::has_subquery) {
                    return self.rel(input, filters);
                }
                let input_names = columns(input, self.qualify);
                let mut node = Node::new("Result".into());
                for e in exprs.iter().filter(|e| e.has_subquery()) {
                    self.text(&mut node, e, &input_names);
                }
                node.children.push(self.rel(input, Vec::new()));
                node
            }
            Rel::Unit => Node::new("Result".into()),
            Rel::System { table } => {
                Node::new(format!("Seq Scan on {}", snake(&format!("{table:?}"))))
            }
            Rel::Values { rows } => {
                let mut node = Node::new("Values Scan on \"*VALUES*\"".into());
                for e in rows.iter().flatten() {
                    self.text(&mut node, e, &[]);
                }
                node
            }
            Rel::GenerateSeries { .. } => Node::new("Function Scan on generate_series".into()),
            Rel::Unnest { .. } => Node::new("Function Scan on unnest".into()),
            Rel::RowsFrom { functions, .. } => match functions.first() {
                Some(first) => self.rel(first, Vec::new()),
                None => Node::new("Result".into()),
            },
            Rel::WorkTable { .. } => Node::new("WorkTable Scan".into()),
            Rel::Join {
                left,
                right,
                kind,
                on,
                lateral,
            } => {
                let hashed = !lateral
                    && on
                        .as_ref()
                        .is_some_and(|on| !on.equi_join_keys(left.width()).is_empty());
                let mut node = Node::new(join_title(*kind, hashed));
                if let Some(on) = on {
                    let label = if hashed { "Hash Cond" } else { "Join Filter" };
                    let on = self.text(&mut node, on, &names);
                    node.props.push(format!("{label}: {on}"));
                }
                node.children.push(self.rel(left, Vec::new()));
                let right = self.rel(right, Vec::new());
                node.children.push(match hashed {
                    true => {
                        let mut hash = Node::new("Hash".into());
                        hash.actual = right.actual;
                        hash.children.push(right);
                        hash
                    }
                    false => right,
                });
                node
            }
            Rel::Aggregate {
                input,
                group_by,
                aggs,
            } => {
                let input_names = columns(input, self.qualify);
                let title = if group_by.is_empty() {
                    "Aggregate"
                } else {
                    "HashAggregate"
                };
                let mut node = Node::new(title.into());
                if !group_by.is_empty() {
                    let keys: Vec<String> = group_by
                        .iter()
                        .map(|g| self.text(&mut node, g, &input_names))
                        .collect();
                    node.props.push(format!("Group Key: {}", keys.join(", ")));
                }
                for e in aggs
                    .iter()
                    .flat_map(|a| a.arg.iter().chain(a.filter.iter()))
                {
                    self.text(&mut node, e, &input_names);
                }
                node.children.push(self.rel(input, Vec::new()));
                node
            }
            Rel::Sort { input, keys } => {
                let mut node = Node::new("Sort".into());
                let keys: Vec<String> = keys.iter().map(|k| sort_key(k, &names)).collect();
                node.props.push(format!("Sort Key: {}", keys.join(", ")));
                node.children.push(self.rel(input, Vec::new()));
                node
            }
            Rel::Limit { input, .. } => {
                let mut node = Node::new("Limit".into());
                node.children.push(self.rel(input, Vec::new()));
                node
            }
            Rel::Unique { input, .. } => {
                let mut node = Node::new("Unique".into());
                node.children.push(self.rel(input, Vec::new()));
                node
            }
            Rel::WindowAgg { input, window } => {
                let mut node = Node::new("WindowAgg".into());
                let input_names = columns(input, self.qualify);
                for e in window.exprs() {
                    self.text(&mut node, e, &input_names);
                }
                node.children.push(self.rel(input, Vec::new()));
                node
            }
            Rel::Distinct { input } => {
                let mut node = Node::new("HashAggregate".into());
                node.props.push(format!("Group Key: {}", names.join(", ")));
                node.children.push(self.rel(input, Vec::new()));
                node
            }
            Rel::Union { left, right, all } => {
                let append = appended(self.rel(left, Vec::new()), self.rel(right, Vec::new()));
                match all {
                    true => append,
                    false => {
                        let mut node = Node::new("HashAggregate".into());
                        node.props.push(format!("Group Key: {}", names.join(", ")));
                        node.children.push(append);
                        node
                    }
                }
            }
            Rel::SetOp {
                left,
                right,
                op,
                all,
            } => {
                let op = match op {
                    SetOpKind::Intersect => "Intersect",
                    SetOpKind::Except => "Except",
                };
                let all = if *all { " All" } else { "" };
                let mut node = Node::new(format!("HashSetOp {op}{all}"));
                node.children.push(appended(
                    self.rel(left, Vec::new()),
                    self.rel(right, Vec::new()),
                ));
                node
            }
            Rel::RecursiveUnion {
                base, recursive, ..
            } => {
                let mut node = Node::new("Recursive Union".into());
                node.children.push(self.rel(base, Vec::new()));
                node.children.push(self.rel(recursive, Vec::new()));
                node
            }
        };
        if let Some(f) = conjunction(&filters) {
            let f = self.text(&mut node, &f, &names);
            node.props.push(format!("Filter: {f}"));
        }
        node
    }
}

/// An Append of two inputs, which returns what they return (a UNION or set operation
/// runs them one after the other: it has no `Rel` of its own to measure).
fn appended(left: Node, right: Node) -> Node {
    let mut append = Node::new("Append".into());
    append.actual = left.actual.map(|l| {
        let r = right.actual.unwrap_or_default();
        NodeActuals {
            loops: l.loops,
            rows: l.rows + r.rows,
            startup: l.startup,
            total: l.total + r.total,
        }
    });
    append.children = vec![left, right];
    append
}

/// Whether the plan joins relations (its columns then print with their table's name).
fn joins(rel: &Rel) -> bool {
    match rel {
        Rel::Join { .. } => true,
        Rel::Filter { input, .. }
        | Rel::Project { input, .. }
        | Rel::Aggregate { input, .. }
        | Rel::Sort { input, .. }
        | Rel::Limit { input, .. }
        | Rel::Distinct { input }
        | Rel::Unique { input, .. }
        | Rel::WindowAgg { input, .. } => joins(input),
        Rel::Union { left, right, .. } | Rel::SetOp { left, right, .. } => {
            joins(left) || joins(right)
        }
        Rel::RecursiveUnion {
            base, recursive, ..
        } => joins(base) || joins(recursive),
        _ => false,
    }
}

/// What the datanodes do with a pushed scan's rows: its filter, and the partial
/// aggregation it answers with instead of rows.
fn remote_lines(work: &ScanWork, names: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(f) = &work.filter {
        lines.push(format!("Remote Filter: {}", expr(f, names, &mut 1)));
    }
    if let Some(p) = &work.partial {
        let states: Vec<String> = p
            .states
            .iter()
            .map(|s| {
                let arg = s
                    .arg
                    .as_ref()
                    .map_or("*".into(), |a| expr(a, names, &mut 1));
                let kind = match s.kind {
                    StateKind::Count => "count",
                    StateKind::Sum(_) => "sum",
                    StateKind::Min => "min",
                    StateKind::Max => "max",
                };
                format!("{kind}({arg})")
            })
            .collect();
        lines.push(format!("Remote Partial Aggregate: {}", states.join(", ")));
        if !p.group_by.is_empty() {
            let keys: Vec<String> = p.group_by.iter().map(|g| expr(g, names, &mut 1)).collect();
            lines.push(format!("Remote Group Key: {}", keys.join(", ")));
        }
    }
    lines
}

fn index_scan_title(table: &TableDef) -> String {
    let index = table
        .pk_name
        .clone()
        .unwrap_or_else(|| format!("{}_pkey", table.name));
    format!("Index Scan using {index} on {}", table.name)
}

fn primary_key_columns(table: &TableDef, qualify: bool) -> Vec<String> {
    let names = table_columns(table, qualify);
    table
        .primary_key
        .iter()
        .flatten()
        .map(|&c| names[c].clone())
        .collect()
}

fn table_columns(table: &TableDef, qualify: bool) -> Vec<String> {
    let name = |c: &str| match qualify {
        true => format!("{}.{c}", table.name),
        false => c.to_string(),
    };
    table.columns.iter().map(|c| name(&c.name)).collect()
}

fn join_title(kind: JoinKind, hashed: bool) -> String {
    let kind = match kind {
        JoinKind::Inner => "",
        JoinKind::Left => " Left",
        JoinKind::Full => " Full",
    };
    match hashed {
        true => format!("Hash{kind} Join"),
        false if kind.is_empty() => "Nested Loop".into(),
        false => format!("Nested Loop{kind} Join"),
    }
}

fn conjunction(filters: &[&Expr]) -> Option<Expr> {
    filters
        .iter()
        .map(|f| (*f).clone())
        .reduce(|a, b| Expr::And(Box::new(a), Box::new(b)))
}

fn and_all(conds: Vec<String>) -> String {
    match conds.len() {
        1 => conds.into_iter().next().unwrap_or_default(),
        _ => format!("({})", conds.join(" AND ")),
    }
}

fn sort_key(k: &SortKey, names: &[String]) -> String {
    let mut s = expr(&k.expr, names, &mut 0);
    if k.descending {
        s.push_str(" DESC");
    }
    // PostgreSQL's default: NULLS LAST ascending, NULLS FIRST descending.
    if k.nulls_first != k.descending {
        s.push_str(if k.nulls_first {
            " NULLS FIRST"
        } else {
            " NULLS LAST"
        });
    }
    s
}

/// The names of `rel`'s output columns, as expressions above it print them.
fn columns(rel: &Rel, qualify: bool) -> Vec<String> {
    match rel {
        Rel::Unit => Vec::new(),
        Rel::Scan { table, .. } => table_columns(table, qualify),
        Rel::PushedScan(p) => {
            let names = table_columns(&p.table, qualify);
            match &p.work.partial {
                None => names,
                Some(partial) => partial
                    .group_by
                    .iter()
                    .map(|g| expr(g, &names, &mut 1))
                    .chain((1..=partial.states.len()).map(|i| format!("partial{i}")))
                    .collect(),
            }
        }
        Rel::System { table } => crate::system_tables::scan_columns(*table)
            .iter()
            .map(|(n, _)| n.to_string())
            .collect(),
        Rel::Values { rows } => (1..=rows.first().map_or(0, Vec::len))
            .map(|i| format!("\"*VALUES*\".column{i}"))
            .collect(),
        Rel::GenerateSeries { .. } => vec!["generate_series".into()],
        Rel::Unnest { .. } => vec!["unnest".into()],
        Rel::RowsFrom {
            functions,
            ordinality,
        } => {
            let mut names: Vec<String> =
                functions.iter().flat_map(|f| columns(f, qualify)).collect();
            names.extend(ordinality.then(|| "ordinality".to_string()));
            names
        }
        Rel::Filter { input, .. }
        | Rel::Sort { input, .. }
        | Rel::Limit { input, .. }
        | Rel::Distinct { input }
        | Rel::Unique { input, .. } => columns(input, qualify),
        Rel::WindowAgg { input, window } => {
            let mut names = columns(input, qualify);
            names.extend(window.calls.iter().map(|c| {
                let name = match &c.func {
                    WindowFunc::Aggregate(a) => a.func.name().to_string(),
                    f => snake(&format!("{f:?}")),
                };
                format!("{name}() OVER (?)")
            }));
            names
        }
        Rel::Project { input, exprs } => {
            let names = columns(input, qualify);
            exprs.iter().map(|e| expr(e, &names, &mut 0)).collect()
        }
        Rel::Join { left, right, .. } => {
            let mut names = columns(left, qualify);
            names.extend(columns(right, qualify));
            names
        }
        Rel::Aggregate {
            input,
            group_by,
            aggs,
        } => {
            let names = columns(input, qualify);
            group_by
                .iter()
                .map(|g| expr(g, &names, &mut 0))
                .chain(aggs.iter().map(|a| aggregate(a, &names)))
                .collect()
        }
        Rel::Union { left, .. } | Rel::SetOp { left, .. } => columns(left, qualify),
        Rel::RecursiveUnion { base, .. } => columns(base, qualify),
        Rel::WorkTable { width, .. } => (1..=*width).map(|i| format!("column{i}")).collect(),
    }
}

fn aggregate(a: &AggCall, names: &[String]) -> String {
    let name = a.func.name().to_string();
    if let (
        AggFunc::PercentileCont { desc }
        | AggFunc::PercentileDisc { desc }
        | AggFunc::Mode { desc },
        Some(e),
    ) = (a.func, &a.arg)
    {
        let call = format!(
            "{name}() WITHIN GROUP (ORDER BY {}{})",
            expr(e, names, &mut 0),
            if desc { " DESC" } else { "" }
        );
        return match &a.filter {
            Some(f) => format!("{call} FILTER (WHERE {})", expr(f, names, &mut 0)),
            None => call,
        };
    }
    let arg = match &a.arg {
        None => "*".to_string(),
        Some(e) if a.distinct => format!("DISTINCT {}", expr(e, names, &mut 0)),
        Some(e) => expr(e, names, &mut 0),
    };
    match &a.filter {
        Some(f) => format!("{name}({arg}) FILTER (WHERE {})", expr(f, names, &mut 0)),
        None => format!("{name}({arg})"),
    }
}

/// `e` as PostgreSQL's EXPLAIN prints an expression: binary operations parenthesized,
/// columns by name, parameters as `$n`, subqueries as `SubPlan n`, numbered from `n` on
/// in the order `collect_subqueries` finds them (parents first).
fn expr(e: &Expr, names: &[String], n: &mut usize) -> String {
    let not = |negated: bool| if negated { "NOT " } else { "" };
    let quantifier = |all: bool| if all { "ALL" } else { "ANY" };
    match e {
        Expr::Const(v, ty) => constant(v, ty),
        Expr::Param { index, .. } => format!("${}", index + 1),
        Expr::Column {
            depth: 0, index, ..
        } => names
            .get(*index)
            .cloned()
            .unwrap_or_else(|| format!("column{}", index + 1)),
        Expr::Column { index, .. } => format!("outer.column{}", index + 1),
        Expr::Binary {
            op, left, right, ..
        } => {
            let l = expr(left, names, n);
            format!("({l} {} {})", op.symbol(), expr(right, names, n))
        }
        Expr::Unary { op, operand, .. } => {
            let op = op.symbol();
            format!("({op} {})", expr(operand, names, n))
        }
        Expr::And(a, b) | Expr::Or(a, b) => {
            let op = if matches!(e, Expr::And(..)) {
                "AND"
            } else {
                "OR"
            };
            let l = expr(a, names, n);
            format!("({l} {op} {})", expr(b, names, n))
        }
        Expr::Not(a) => format!("(NOT {})", expr(a, names, n)),
        Expr::IsNull { operand, negated } => {
            format!("({} IS {}NULL)", expr(operand, names, n), not(*negated))
        }
        Expr::IsDistinctFrom {
            left,
            right,
            negated,
        } => {
            let l = expr(left, names, n);
            format!(
                "({l} IS {}DISTINCT FROM {})",
                not(*negated),
                expr(right, names, n)
            )
        }
        Expr::Cast { operand, to, .. } => format!("({})::{to}", expr(operand, names, n)),
        // a percentile: its aggregate (`percentile_cont() WITHIN GROUP (…)`) with the
        // fraction put back among its parentheses
        Expr::Func {
            func: ScalarFunc::PercentileContFinal | ScalarFunc::PercentileDiscFinal,
            args,
            ..
        } if args.len() == 2 => {
            let call = expr(&args[0], names, n);
            let fraction = expr(&args[1], names, n);
            call.replacen("()", &format!("({fraction})"), 1)
        }
        Expr::Func { func, args, .. } => {
            format!("{}({})", snake(&format!("{func:?}")), list(args, names, n))
        }
        Expr::Coalesce { args, .. } => format!("COALESCE({})", list(args, names, n)),
        Expr::Array { elements, .. } => format!("ARRAY[{}]", list(elements, names, n)),
        Expr::Case {
            operand,
            whens,
            otherwise,
            ..
        } => {
            let mut s = "CASE".to_string();
            if let Some(o) = operand {
                s += &format!(" {}", expr(o, names, n));
            }
            for (w, t) in whens {
                let w = expr(w, names, n);
                s += &format!(" WHEN {w} THEN {}", expr(t, names, n));
            }
            if let Some(o) = otherwise {
                s += &format!(" ELSE {}", expr(o, names, n));
            }
            s + " END"
        }
        Expr::InList {
            operand,
            list: items,
            negated,
        } => {
            let l = expr(operand, names, n);
            format!("({l} {}IN ({}))", not(*negated), list(items, names, n))
        }
        Expr::AnyArray {
            op,
            left,
            array,
            all,
        } => {
            let l = expr(left, names, n);
            let a = expr(array, names, n);
            format!("({l} {} {}({a}))", op.symbol(), quantifier(*all))
        }
        Expr::Subquery { kind, .. } => {
            // The subquery is found before what is inside its left operand.
            let plan = format!("SubPlan {n}");
            *n += 1;
            match kind {
                SubqueryKind::Scalar => format!("({plan})"),
                SubqueryKind::Exists => format!("(EXISTS ({plan}))"),
                SubqueryKind::Array => format!("(ARRAY({plan}))"),
                SubqueryKind::In { left, negated } => {
                    format!("({} {}IN ({plan}))", expr(left, names, n), not(*negated))
                }
                SubqueryKind::RowIn { left, negated } => {
                    let items: Vec<String> = left.iter().map(|e| expr(e, names, n)).collect();
                    format!("(({}) {}IN ({plan}))", items.join(", "), not(*negated))
                }
                SubqueryKind::Quantified { op, left, all } => format!(
                    "({} {} {}({plan}))",
                    expr(left, names, n),
                    op.symbol(),
                    quantifier(*all)
                ),
            }
        }
    }
}

fn list(es: &[Expr], names: &[String], n: &mut usize) -> String {
    es.iter()
        .map(|e| expr(e, names, n))
        .collect::<Vec<_>>()
        .join(", ")
}

fn constant(v: &Value, ty: &types::DataType) -> String {
    match v {
        Value::Null => "NULL".into(),
        _ => match types::io::to_text_string(v, ty) {
            Some(text) if ty.is_numeric() || ty.is_integer() => text,
            Some(text) => format!("'{}'::{ty}", text.replace('\'', "''")),
            None => format!("{v:?}"),
        },
    }
}

/// The subqueries in `e` (not those inside them), in order.
fn collect_subqueries<'e>(e: &'e Expr, out: &mut Vec<&'e Query>) {
    e.visit(&mut |x| {
        if let Expr::Subquery { plan, .. } = x {
            out.push(plan);
        }
    });
}

/// `CamelCase` as `camel_case` (the Rust names of functions and catalogs spell the SQL
/// names so).
pub(crate) fn snake(camel: &str) -> String {
    let mut out = String::with_capacity(camel.len() + 4);
    for (i, c) in camel.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}
