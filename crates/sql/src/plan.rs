//! Bound statements: names resolved, types known, ready to execute.

use crate::catalog::{ColumnDef, DataTypeDef, TableDef};
use crate::functions::{AggFunc, ScalarFunc};
use std::borrow::Cow;
use std::sync::Arc;
use types::ops::{BinaryOp, UnaryOp};
use types::{DataType, Value};

/// A bound expression. Column references are positions in the row of the relation the
/// expression is evaluated against (`depth` 0), or in an enclosing query's row (depth > 0).
/// Serde carries the expressions a datanode evaluates (`crate::pushdown`), which hold no
/// subquery: that variant cannot be sent.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Expr {
    Const(Value, DataType),
    Param {
        index: usize,
        ty: DataType,
    },
    Column {
        depth: usize,
        index: usize,
        ty: DataType,
    },
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
        ty: DataType,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
        ty: DataType,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    IsNull {
        operand: Box<Expr>,
        negated: bool,
    },
    IsDistinctFrom {
        left: Box<Expr>,
        right: Box<Expr>,
        negated: bool,
    },
    Cast {
        operand: Box<Expr>,
        from: DataType,
        to: DataType,
        explicit: bool,
    },
    Func {
        func: ScalarFunc,
        args: Vec<Expr>,
        ty: DataType,
    },
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        otherwise: Option<Box<Expr>>,
        ty: DataType,
    },
    /// `x IN (a, b, …)`; NULL semantics as in SQL.
    InList {
        operand: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    /// `x op ANY (array)` / `x op ALL (array)`.
    AnyArray {
        op: BinaryOp,
        left: Box<Expr>,
        array: Box<Expr>,
        all: bool,
    },
    Array {
        elements: Vec<Expr>,
        ty: DataType,
    },
    Coalesce {
        args: Vec<Expr>,
        ty: DataType,
    },
    /// Last: serde numbers the variants it skips in serializing but not in
    /// deserializing, so a skipped one anywhere else would shift those after it.
    #[serde(skip)]
    Subquery {
        plan: Box<Query>,
        kind: SubqueryKind,
        ty: DataType,
    },
}

#[derive(Debug, Clone)]
pub enum SubqueryKind {
    Scalar,
    Exists,
    /// `left IN (subquery)` (negated for NOT IN).
    In {
        left: Box<Expr>,
        negated: bool,
    },
    /// `(a, b, …) [NOT] IN (subquery)`, also `= ANY` and `<> ALL`: the row compared with
    /// each of the subquery's rows column by column (`crate::subquery::RowSet`).
    RowIn {
        left: Vec<Expr>,
        negated: bool,
    },
    /// `ARRAY(subquery)`.
    Array,
    /// `left op ANY (subquery)` / `left op ALL (subquery)` (other than `= ANY` and
    /// `<> ALL`, which are IN and NOT IN).
    Quantified {
        op: BinaryOp,
        left: Box<Expr>,
        all: bool,
    },
}

impl Expr {
    /// The column of the row at hand that `self` is, seen through a cast between
    /// integer types or from varchar to text: integers of every width share one key
    /// encoding (`types::codec::encode_key`) and so one bucket, so `int4_col = $1::int8`,
    /// as drivers bind a 64-bit parameter, still finds its row by key and its datanode by
    /// hash (a value outside the column's range finds none; the filter is still applied
    /// to what is found); a varchar is a text value, compared as text when a text
    /// parameter meets a varchar column (`varchar_col = $1`, the binder's
    /// `(varchar_col)::text = $1::text`, as PostgreSQL's binary-compatible relabelling);
    /// a cast that only drops a modifier (`timestamp(0)` to `timestamp`) changes nothing.
    pub fn key_column(&self) -> Option<usize> {
        match self {
            Expr::Column {
                depth: 0, index, ..
            } => Some(*index),
            Expr::Cast {
                operand, from, to, ..
            } if from.is_integer() && to.is_integer()
                || matches!((from, to), (DataType::Varchar { .. }, DataType::Text))
                || from.without_typmod() == *to =>
            {
                match operand.as_ref() {
                    Expr::Column {
                        depth: 0, index, ..
                    } => Some(*index),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    pub fn ty(&self) -> DataType {
        match self {
            Expr::Const(_, ty)
            | Expr::Param { ty, .. }
            | Expr::Column { ty, .. }
            | Expr::Binary { ty, .. }
            | Expr::Unary { ty, .. }
            | Expr::Func { ty, .. }
            | Expr::Case { ty, .. }
            | Expr::Array { ty, .. }
            | Expr::Subquery { ty, .. }
            | Expr::Coalesce { ty, .. } => ty.clone(),
            Expr::Cast { to, .. } => to.clone(),
            Expr::And(..)
            | Expr::Or(..)
            | Expr::Not(_)
            | Expr::IsNull { .. }
            | Expr::IsDistinctFrom { .. }
            | Expr::InList { .. }
            | Expr::AnyArray { .. } => DataType::Bool,
        }
    }

    pub fn is_const(&self) -> bool {
        matches!(self, Expr::Const(..))
    }

    /// Visit this expression and every expression under it, parents first; subqueries'
    /// plans are not entered (the left operand of `IN (subquery)` is).
    pub fn visit<'e>(&'e self, f: &mut dyn FnMut(&'e Expr)) {
        f(self);
        let mut each = |e: &'e Expr| e.visit(f);
        match self {
            Expr::Const(..) | Expr::Param { .. } | Expr::Column { .. } => {}
            Expr::Binary { left, right, .. }
            | Expr::And(left, right)
            | Expr::Or(left, right)
            | Expr::IsDistinctFrom { left, right, .. } => {
                each(left);
                each(right);
            }
            Expr::Unary { operand, .. }
            | Expr::Not(operand)
            | Expr::IsNull { operand, .. }
            | Expr::Cast { operand, .. } => each(operand),
            Expr::Func { args, .. }
            | Expr::Coalesce { args, .. }
            | Expr::Array { elements: args, .. } => args.iter().for_each(each),
            Expr::Case {
                operand,
                whens,
                otherwise,
                ..
            } => {
                operand.iter().for_each(|o| each(o));
                for (w, t) in whens {
                    each(w);
                    each(t);
                }
                otherwise.iter().for_each(|o| each(o));
            }
            Expr::InList { operand, list, .. } => {
                each(operand);
                list.iter().for_each(each);
            }
            Expr::AnyArray { left, array, .. } => {
                each(left);
                each(array);
            }
            Expr::Subquery {
                kind: SubqueryKind::In { left, .. } | SubqueryKind::Quantified { left, .. },
                ..
            } => each(left),
            Expr::Subquery {
                kind: SubqueryKind::RowIn { left, .. },
                ..
            } => left.iter().for_each(each),
            Expr::Subquery { .. } => {}
        }
    }

    /// `visit` with each expression given mutably, children first.
    pub fn visit_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        let mut each = |e: &mut Expr| e.visit_mut(f);
        match self {
            Expr::Const(..) | Expr::Param { .. } | Expr::Column { .. } => {}
            Expr::Binary { left, right, .. }
            | Expr::And(left, right)
            | Expr::Or(left, right)
            | Expr::IsDistinctFrom { left, right, .. } => {
                each(left);
                each(right);
            }
            Expr::Unary { operand, .. }
            | Expr::Not(operand)
            | Expr::IsNull { operand, .. }
            | Expr::Cast { operand, .. } => each(operand),
            Expr::Func { args, .. }
            | Expr::Coalesce { args, .. }
            | Expr::Array { elements: args, .. } => args.iter_mut().for_each(each),
            Expr::Case {
                operand,
                whens,
                otherwise,
                ..
            } => {
                operand.iter_mut().for_each(|o| each(o));
                for (w, t) in whens {
                    each(w);
                    each(t);
                }
                otherwise.iter_mut().for_each(|o| each(o));
            }
            Expr::InList { operand, list, .. } => {
                each(operand);
                list.iter_mut().for_each(each);
            }
            Expr::AnyArray { left, array, .. } => {
                each(left);
                each(array);
            }
            Expr::Subquery {
                kind: SubqueryKind::In { left, .. } | SubqueryKind::Quantified { left, .. },
                ..
            } => each(left),
            Expr::Subquery {
                kind: SubqueryKind::RowIn { left, .. },
                ..
            } => left.iter_mut().for_each(each),
            Expr::Subquery { .. } => {}
        }
        f(self);
    }

    /// Which side of a join whose left side has `left_width` columns this expression
    /// reads: Some(true) the left side's columns only, Some(false) the right side's only;
    /// None if both, neither, or it has a subquery (which is evaluated where it was
    /// written).
    pub fn join_side(&self, left_width: usize) -> Option<bool> {
        let (mut left, mut right, mut subquery) = (false, false, false);
        self.visit(&mut |x| match x {
            Expr::Column {
                depth: 0, index, ..
            } => {
                if *index < left_width {
                    left = true
                } else {
                    right = true
                }
            }
            Expr::Subquery { .. } => subquery = true,
            _ => {}
        });
        (!subquery && left != right).then_some(left)
    }

    /// The equalities `l = r` among the conjuncts of this join condition with `l` over
    /// the left side's columns only and `r` over the right side's (or the reverse), of one
    /// type family, so that equal values have equal key encodings: what a hash join hashes
    /// on (the left one of each pair on the left side).
    pub fn equi_join_keys(&self, left_width: usize) -> Vec<(&Expr, &Expr)> {
        let side = |e: &Expr| e.join_side(left_width);
        let family = |t: &DataType| match t {
            DataType::Int2 | DataType::Int4 | DataType::Int8 => DataType::Int8,
            t => t.clone(),
        };
        self.conjuncts()
            .into_iter()
            .filter_map(|c| match c {
                Expr::Binary {
                    op: BinaryOp::Eq,
                    left,
                    right,
                    ..
                } if family(&left.ty()) == family(&right.ty()) => match (side(left), side(right)) {
                    (Some(true), Some(false)) => Some((left.as_ref(), right.as_ref())),
                    (Some(false), Some(true)) => Some((right.as_ref(), left.as_ref())),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    /// The conjuncts of this expression (its operands of AND, at any depth), left to
    /// right.
    pub fn conjuncts(&self) -> Vec<&Expr> {
        let mut conjuncts = Vec::new();
        let mut stack = vec![self];
        while let Some(e) = stack.pop() {
            match e {
                Expr::And(a, b) => {
                    stack.push(b);
                    stack.push(a);
                }
                other => conjuncts.push(other),
            }
        }
        conjuncts
    }

    /// Whether a subquery occurs in this expression.
    pub fn has_subquery(&self) -> bool {
        let mut found = false;
        self.visit(&mut |e| found |= matches!(e, Expr::Subquery { .. }));
        found
    }
}

/// How a base-table scan reaches its rows.
#[derive(Debug, Clone)]
pub enum Access {
    /// Every row.
    Full,
    /// Exactly the row whose primary key equals these expressions (in key order).
    PrimaryKey(Vec<Expr>),
    /// Rows whose leading primary-key columns equal `prefix` (in key order) and whose
    /// next key column lies between two bounds (either may be open; both open only with
    /// a prefix).
    KeyRange {
        prefix: Vec<Expr>,
        lower: Option<KeyBound>,
        upper: Option<KeyBound>,
    },
    /// The rows whose primary key is one of several: `before`, one of `values`, then
    /// `after`, in key order (`k1 = a AND k2 IN (…)`, `k = ANY ($1)`).
    PrimaryKeys {
        before: Vec<Expr>,
        values: KeyValues,
        after: Vec<Expr>,
    },
    /// Rows found through the table's secondary index `index` (a position in
    /// `TableDef::indexes`), then read by their storage keys (decision 0035).
    Index { index: usize, lookup: IndexLookup },
}

/// The values one primary-key column may take in `Access::PrimaryKeys`.
#[derive(Debug, Clone)]
pub enum KeyValues {
    /// An IN list's.
    List(Vec<Expr>),
    /// The elements of an array (`= ANY (array)`); NULL elements match nothing.
    Array(Expr),
}

impl KeyValues {
    fn exprs(&self) -> &[Expr] {
        match self {
            KeyValues::List(list) => list,
            KeyValues::Array(array) => std::slice::from_ref(array),
        }
    }
}

/// Which entries of a secondary index an `Access::Index` reads.
#[derive(Debug, Clone)]
pub enum IndexLookup {
    /// Those whose leading values equal one of these lists (equality on the index's
    /// leading columns, or an IN list on its first).
    Prefixes(Vec<Vec<Expr>>),
    /// Those whose first value lies between two bounds (either may be open).
    Range {
        lower: Option<KeyBound>,
        upper: Option<KeyBound>,
    },
}

impl Access {
    /// The expressions a primary-key access evaluates to find its rows.
    pub fn key_exprs(&self) -> Box<dyn Iterator<Item = &Expr> + '_> {
        match self {
            Access::Full | Access::Index { .. } => Box::new(std::iter::empty()),
            Access::PrimaryKey(exprs) => Box::new(exprs.iter()),
            Access::KeyRange {
                prefix,
                lower,
                upper,
            } => Box::new(
                prefix
                    .iter()
                    .chain(lower.iter().chain(upper.iter()).map(|b| &b.value)),
            ),
            Access::PrimaryKeys {
                before,
                values,
                after,
            } => Box::new(before.iter().chain(values.exprs()).chain(after.iter())),
        }
    }

    fn visit_exprs_deep<'e>(&'e self, f: &mut dyn FnMut(&'e Expr)) {
        match self {
            Access::Full => {}
            Access::PrimaryKey(exprs) => exprs.iter().for_each(|e| visit_expr_deep(e, f)),
            Access::PrimaryKeys { .. } | Access::KeyRange { .. } => {
                self.key_exprs().for_each(|e| visit_expr_deep(e, f))
            }
            Access::Index {
                lookup: IndexLookup::Range { lower, upper },
                ..
            } => lower
                .iter()
                .chain(upper.iter())
                .for_each(|b| visit_expr_deep(&b.value, f)),
            Access::Index {
                lookup: IndexLookup::Prefixes(prefixes),
                ..
            } => prefixes
                .iter()
                .flatten()
                .for_each(|e| visit_expr_deep(e, f)),
        }
    }
}

#[derive(Debug, Clone)]
pub struct KeyBound {
    pub value: Expr,
    pub inclusive: bool,
}

/// A built-in table-valued source whose rows the coordinator computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemTable {
    PgClass,
    PgNamespace,
    PgAttribute,
    PgType,
    PgIndex,
    PgDatabase,
    PgAm,
    PgConstraint,
    PgInherits,
    PgPartitionedTable,
    PgRoles,
    PgAttrdef,
    PgDescription,
    PgTablespace,
    PgSettings,
    PgRange,
    PgEnum,
    PgProc,
    PgCollation,
    PgPolicy,
    PgStatisticExt,
    PgPublication,
    PgPublicationRel,
    PgPublicationNamespace,
    PgTrigger,
    PgForeignTable,
    PgStatActivity,
    PgStatStatements,
    PgStatStatementsInfo,
    /// The cumulative statistics views (the coordinator's `cumulative_stats`).
    PgStatDatabase,
    PgStatAllTables,
    PgStatUserTables,
    PgStatAllIndexes,
    PgStatUserIndexes,
    PgExtension,
    PgUser,
    PgAuthid,
    PgAuthMembers,
    PgDbRoleSetting,
    PgEventTrigger,
    /// Transactions prepared for two-phase commit (PREPARE TRANSACTION), read from the
    /// datanodes.
    PgPreparedXacts,
    /// The transactions' locks and lock waits (the coordinator's sessions and the
    /// datanodes' wait-for edges).
    PgLocks,
    /// Sequences' parameters (decision 0034).
    PgSequence,
    /// The view over pg_sequence that drivers read.
    PgSequences,
    /// Dependencies: those of sequences on the columns that own them.
    PgDepend,
    /// The view of every index with its definition.
    PgIndexes,
    PgViews,
    /// pg_tables: the tables (user tables only, as pg_class here).
    PgTables,
    PgInitPrivs,
    PgLanguage,
    PgOperator,
    PgOpclass,
    PgOpfamily,
    PgAmop,
    PgAmproc,
    PgTsParser,
    PgTsTemplate,
    PgTsDict,
    PgTsConfig,
    PgForeignDataWrapper,
    PgForeignServer,
    PgDefaultAcl,
    PgConversion,
    PgCast,
    PgTransform,
    PgRewrite,
    PgSubscription,
    PgLargeobjectMetadata,
    PgSeclabels,
    PgShseclabel,
    PgParameterAcl,
    PgUserMapping,
    /// Meridian's own view: each user table's distribution (`DISTRIBUTE BY`).
    MeridianDistribution,
    /// Meridian's own view: the cluster's nodes as this coordinator sees them.
    MeridianNodes,
    /// A view of `information_schema` (`crate::information_schema`).
    Information(crate::information_schema::InformationView),
}

#[derive(Debug, Clone)]
pub enum Rel {
    /// One row, no columns (SELECT without FROM).
    Unit,
    Scan {
        table: Arc<TableDef>,
        access: Access,
    },
    /// A scan of a table spread over several datanodes whose filter, and possibly partial
    /// aggregation, runs on the datanodes (`crate::pushdown`, decision 0033).
    PushedScan(Box<crate::pushdown::PushedScan>),
    System {
        table: SystemTable,
    },
    Values {
        rows: Vec<Vec<Expr>>,
    },
    GenerateSeries {
        start: Expr,
        stop: Expr,
        step: Option<Expr>,
    },
    /// `unnest(a)`: the array evaluated once, its elements (a multidimensional array's
    /// flattened; `unnests_arrays` for a list of arrays) in order; a NULL array has none.
    /// The set-returning functions over text and jsonb are built on it too.
    Unnest {
        array: Expr,
    },
    /// `ROWS FROM (f(…), g(…), …) [WITH ORDINALITY]`: the functions' rows side by side,
    /// each function's columns NULL past its last row, until the longest is done, then the
    /// 1-based position as a bigint where `ordinality`. Also `unnest(a, b, …)` and a
    /// select list's set-returning functions, which PostgreSQL runs in lockstep.
    RowsFrom {
        functions: Vec<Rel>,
        ordinality: bool,
    },
    Filter {
        input: Box<Rel>,
        predicate: Expr,
    },
    Project {
        input: Box<Rel>,
        exprs: Vec<Expr>,
    },
    Join {
        left: Box<Rel>,
        right: Box<Rel>,
        kind: JoinKind,
        on: Option<Expr>,
        lateral: bool,
    },
    Aggregate {
        input: Box<Rel>,
        group_by: Vec<Expr>,
        aggs: Vec<AggCall>,
    },
    Sort {
        input: Box<Rel>,
        keys: Vec<SortKey>,
    },
    Limit {
        input: Box<Rel>,
        limit: Option<Expr>,
        offset: Option<Expr>,
    },
    Distinct {
        input: Box<Rel>,
    },
    /// DISTINCT ON: the first of each run of rows (sorted by `columns` first) whose
    /// values at `columns` are equal (NULLs equal).
    Unique {
        input: Box<Rel>,
        columns: Vec<usize>,
    },
    /// Window functions over the input (sorted by the window's partition and order
    /// keys): each input row followed by the value of each of `window.calls`
    /// (decision 0037).
    WindowAgg {
        input: Box<Rel>,
        window: Box<Window>,
    },
    Union {
        left: Box<Rel>,
        right: Box<Rel>,
        all: bool,
    },
    /// INTERSECT / EXCEPT [ALL]: each distinct row (NULLs equal) with its count on each
    /// side, emitted as often as `op` and `all` say (PostgreSQL's HashSetOp).
    SetOp {
        left: Box<Rel>,
        right: Box<Rel>,
        op: SetOpKind,
        all: bool,
    },
    /// `WITH RECURSIVE` term: `base UNION [ALL] recursive`, where `recursive` reads the
    /// rows of the previous iteration through a `WorkTable` sharing `work`.
    RecursiveUnion {
        base: Box<Rel>,
        recursive: Box<Rel>,
        all: bool,
        work: WorkTableCell,
    },
    /// The rows of the current iteration of the enclosing `RecursiveUnion`.
    WorkTable {
        work: WorkTableCell,
        width: usize,
    },
}

/// The working table of a recursive CTE, shared between its `RecursiveUnion` and the
/// `WorkTable` scans in its recursive term (set by the executor on each iteration).
pub type WorkTableCell = Arc<std::sync::Mutex<Vec<Vec<Value>>>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    /// FULL: a LEFT join that also emits the right rows no left row matched, NULL-extended.
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOpKind {
    Intersect,
    Except,
}

impl SetOpKind {
    /// How many copies of a row that appears `left` times on the left and `right` times
    /// on the right the result has.
    pub fn copies(self, all: bool, left: u64, right: u64) -> u64 {
        match (self, all) {
            (SetOpKind::Intersect, true) => left.min(right),
            (SetOpKind::Intersect, false) => u64::from(left > 0 && right > 0),
            (SetOpKind::Except, true) => left.saturating_sub(right),
            (SetOpKind::Except, false) => u64::from(left > 0 && right == 0),
        }
    }
}

#[derive(Debug, Clone)]
pub struct AggCall {
    pub func: AggFunc,
    /// None for count(*).
    pub arg: Option<Expr>,
    pub distinct: bool,
    /// `FILTER (WHERE …)`: only rows for which it is true reach the aggregate.
    pub filter: Option<Expr>,
    pub ty: DataType,
}

/// One window (`OVER (PARTITION BY … ORDER BY … frame)`) and the calls evaluated over it.
#[derive(Debug, Clone)]
pub struct Window {
    pub partition_by: Vec<Expr>,
    pub order_by: Vec<SortKey>,
    pub frame: WindowFrame,
    pub calls: Vec<WindowCall>,
}

#[derive(Debug, Clone)]
pub struct WindowFrame {
    pub units: FrameUnits,
    pub start: FrameBound,
    pub end: FrameBound,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameUnits {
    Rows,
    Range,
    Groups,
}

/// A frame bound; the offsets are constant expressions (int8 for ROWS and GROUPS, of the
/// ORDER BY key's type, or interval, for RANGE).
#[derive(Debug, Clone)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

#[derive(Debug, Clone)]
pub struct WindowCall {
    pub func: WindowFunc,
    /// The arguments of the ranking and value functions (an aggregate holds its own).
    pub args: Vec<Expr>,
    pub ty: DataType,
}

#[derive(Debug, Clone)]
pub enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    Aggregate(AggCall),
}

impl Window {
    /// Every expression of the window and its calls.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        let bounds = [&self.frame.start, &self.frame.end]
            .into_iter()
            .filter_map(|b| match b {
                FrameBound::Preceding(e) | FrameBound::Following(e) => Some(e),
                _ => None,
            });
        self.partition_by
            .iter()
            .chain(self.order_by.iter().map(|k| &k.expr))
            .chain(bounds)
            .chain(self.calls.iter().flat_map(|c| {
                let agg = match &c.func {
                    WindowFunc::Aggregate(a) => Some(a),
                    _ => None,
                };
                c.args
                    .iter()
                    .chain(agg.into_iter().flat_map(|a| a.arg.iter().chain(&a.filter)))
            }))
    }
}

#[derive(Debug, Clone)]
pub struct SortKey {
    pub expr: Expr,
    pub descending: bool,
    pub nulls_first: bool,
}

/// A column of a statement's result, as RowDescription reports it.
#[derive(Debug, Clone)]
pub struct OutputColumn {
    pub name: String,
    pub ty: DataType,
    pub table_oid: u32,
    pub column_attr: i16,
}

#[derive(Debug, Clone)]
pub struct Query {
    pub root: Rel,
    pub columns: Vec<OutputColumn>,
    /// Whether any expression refers to an enclosing query (correlated subquery).
    pub correlated: bool,
    /// For a correlated subquery, the positions at which it may read its enclosing rows
    /// (`referenced_outer_columns`): what its cached results are keyed by.
    pub outer_columns: Vec<usize>,
    /// SELECT … FOR UPDATE / FOR SHARE: the rows are locked as they are returned.
    pub locking: Option<Box<RowLocking>>,
}

/// The row locks of a SELECT … FOR UPDATE / FOR SHARE over one table. The query's rows
/// end with the table's primary-key values, which are not output columns: the key each
/// row is locked by.
#[derive(Debug, Clone)]
pub struct RowLocking {
    pub table: Arc<TableDef>,
    pub wait: LockedRowWait,
}

/// What a row another transaction holds does to SELECT … FOR UPDATE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockedRowWait {
    /// Wait for it (the default).
    Wait,
    /// NOWAIT: fail with 55P03.
    NoWait,
    /// SKIP LOCKED: leave the row out.
    SkipLocked,
}

impl RowLocking {
    /// How many values at the end of each row are the primary key.
    pub fn key_columns(&self) -> usize {
        self.table.primary_key.as_ref().map_or(0, Vec::len)
    }
}

impl Query {
    /// Every column position referenced one level up or more anywhere in the plan, nested
    /// subqueries included: a superset of the positions read of the enclosing rows (a
    /// reference to a level inside the plan adds a position that is merely not needed).
    pub fn referenced_outer_columns(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.root.visit_exprs_deep(&mut |e| {
            if let Expr::Column { depth, index, .. } = e {
                if *depth > 0 {
                    out.push(*index);
                }
            }
        });
        out.sort_unstable();
        out.dedup();
        out
    }
}

#[derive(Debug, Clone)]
pub struct Insert {
    pub table: Arc<TableDef>,
    /// For each table column: the source position in the input row, or the default.
    pub targets: Vec<InsertTarget>,
    pub source: Rel,
    pub source_types: Vec<DataType>,
    pub on_conflict_do_nothing: bool,
    /// ON CONFLICT (arbiter) DO UPDATE.
    pub on_conflict_update: Option<Box<ConflictUpdate>>,
    /// The unique key whose conflicts ON CONFLICT handles (`AnyUnique` without it).
    pub arbiter: Arbiter,
    pub returning: Option<Vec<(Expr, OutputColumn)>>,
    /// The table's CHECK constraints, which every row written satisfies (behind one
    /// pointer: a bound `Statement` stays small).
    pub checks: Arc<Vec<BoundCheck>>,
    /// The table's foreign keys, which every row written satisfies, and those
    /// referencing it (ON CONFLICT DO UPDATE may change a referenced key).
    pub foreign_keys: Arc<ForeignKeys>,
}

/// The foreign keys a statement writing a table keeps: `parents`, those of the table
/// whose referenced row each written row must have, and `children`, those referencing
/// the table, whose rows follow a deleted row or a changed key. Empty for a table with
/// none (and then the statement does no more than it would without them).
#[derive(Debug, Clone, Default)]
pub struct ForeignKeys {
    pub parents: Vec<ParentKey>,
    pub children: Vec<ChildReference>,
}

impl ForeignKeys {
    pub fn is_empty(&self) -> bool {
        self.parents.is_empty() && self.children.is_empty()
    }
}

/// A foreign key of the written table: a written row whose `columns` are all non-NULL
/// must find `parent`'s row with those values (MATCH SIMPLE).
#[derive(Debug, Clone)]
pub struct ParentKey {
    pub name: String,
    pub columns: Vec<usize>,
    pub parent: Arc<TableDef>,
    /// How the parent row is found: by primary key (`key[i]` is the position in
    /// `columns` of the primary key's `i`th column) or through the unique index
    /// `parent.indexes[index]` (`key[i]` likewise for its `i`th column).
    pub lookup: ParentLookup,
    /// The types of the parent's columns, in `columns`' order: the values are cast to
    /// them before they are looked up.
    pub types: Vec<DataType>,
}

#[derive(Debug, Clone)]
pub enum ParentLookup {
    PrimaryKey { key: Vec<usize> },
    UniqueIndex { index: usize, key: Vec<usize> },
}

/// A foreign key referencing the written table: what happens to `child`'s rows whose
/// `columns` hold a deleted row's (or an updated row's old) `parent_columns` values.
#[derive(Debug, Clone)]
pub struct ChildReference {
    pub name: String,
    pub child: Arc<TableDef>,
    pub columns: Vec<usize>,
    pub parent_columns: Vec<usize>,
    /// ON DELETE for a DELETE's references, ON UPDATE for an UPDATE's.
    pub action: crate::catalog::ReferentialAction,
}

/// A CHECK constraint bound over a row of its table.
#[derive(Debug, Clone)]
pub struct BoundCheck {
    pub name: String,
    pub expr: Expr,
}

/// What INSERT … ON CONFLICT DO UPDATE does to the row already under a proposed key: its
/// expressions read that row's columns followed by the proposed row's (`excluded`).
#[derive(Debug, Clone)]
pub struct ConflictUpdate {
    pub assignments: Vec<(usize, Expr)>,
    pub filter: Option<Expr>,
}

/// The unique key whose conflict INSERT … ON CONFLICT turns into DO NOTHING or DO UPDATE;
/// a conflict on any other stays a unique violation, as PostgreSQL's arbiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arbiter {
    /// ON CONFLICT DO NOTHING without a target (and INSERT without ON CONFLICT).
    AnyUnique,
    PrimaryKey,
    /// `table.indexes[i]`, a unique index.
    Index(usize),
}

#[derive(Debug, Clone)]
pub enum InsertTarget {
    Source(usize),
    Default(Option<Expr>),
}

#[derive(Debug, Clone)]
pub struct Update {
    pub table: Arc<TableDef>,
    pub access: Access,
    pub filter: Option<Expr>,
    /// (column index, new value expression over the old row).
    pub assignments: Vec<(usize, Expr)>,
    pub returning: Option<Vec<(Expr, OutputColumn)>>,
    pub checks: Arc<Vec<BoundCheck>>,
    /// The foreign keys whose columns SET assigns, on either side.
    pub foreign_keys: Arc<ForeignKeys>,
    /// UPDATE … FROM: the target's rows joined to the FROM items and filtered by WHERE
    /// (the target's columns first); SET and RETURNING are bound over its rows, and
    /// `access` and `filter` are unused.
    pub joined: Option<Box<Query>>,
}

#[derive(Debug, Clone)]
pub struct Delete {
    pub table: Arc<TableDef>,
    pub access: Access,
    pub filter: Option<Expr>,
    pub returning: Option<Vec<(Expr, OutputColumn)>>,
    /// DELETE … USING: as `Update::joined`.
    pub joined: Option<Box<Query>>,
    /// The foreign keys referencing the table (`children` only).
    pub foreign_keys: Arc<ForeignKeys>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    #[default]
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

#[derive(Debug, Clone)]
pub struct CreateTable {
    pub name: String,
    pub if_not_exists: bool,
    pub columns: Vec<crate::catalog::ColumnDef>,
    pub primary_key: Option<Vec<usize>>,
    pub fillfactor: Option<u32>,
    pub distribution: crate::catalog::Distribution,
    /// The sequences of its serial and identity columns.
    pub sequences: Vec<crate::sequence::ColumnSequence>,
    /// UNIQUE constraints, each made an index with the table.
    pub unique: Vec<UniqueConstraint>,
    /// CHECK constraints, named (their OIDs are given when the table is created).
    pub checks: Vec<crate::catalog::CheckDef>,
    /// FOREIGN KEY constraints, named (OIDs given as the CHECKs'; a self-reference's
    /// `parent` is 0 until the table has its OID).
    pub foreign_keys: Vec<crate::catalog::ForeignKeyDef>,
}

/// CREATE TABLE … AS / SELECT … INTO: the table, and the INSERT (as text, bound once the
/// table exists) that fills it; None for WITH NO DATA.
#[derive(Debug, Clone)]
pub struct CreateTableAs {
    pub table: CreateTable,
    pub rows: Option<String>,
}

/// A UNIQUE constraint of CREATE TABLE: its name (PostgreSQL's `t_a_key` unless given)
/// and columns.
#[derive(Debug, Clone)]
pub struct UniqueConstraint {
    pub name: String,
    pub columns: Vec<usize>,
}

/// CREATE [UNIQUE] INDEX (decision 0035).
#[derive(Debug, Clone)]
pub struct CreateIndex {
    pub table: Arc<TableDef>,
    /// None: PostgreSQL's default name, chosen when the index is created.
    pub name: Option<String>,
    pub if_not_exists: bool,
    pub unique: bool,
    pub columns: Vec<crate::index::IndexColumn>,
}

#[derive(Debug, Clone)]
pub struct CopyFrom {
    pub table: Arc<TableDef>,
    /// Number of fields in each input line.
    pub fields: usize,
    /// For each table column: the input field it comes from, or its default.
    pub targets: Vec<InsertTarget>,
    pub format: crate::copy::CopyFormat,
    pub checks: Arc<Vec<BoundCheck>>,
    /// The table's foreign keys (`parents` only).
    pub foreign_keys: Arc<ForeignKeys>,
}

/// COPY … TO STDOUT: a table's columns are copied as the query selecting them.
#[derive(Debug, Clone)]
pub struct CopyTo {
    pub query: Query,
    pub format: crate::copy::CopyFormat,
}

/// ALTER TABLE: its actions in the order written, each applied to the table as the
/// actions before it left it (so columns are named, and resolved when it runs).
#[derive(Debug, Clone)]
pub struct AlterTable {
    pub table: Arc<TableDef>,
    pub actions: Vec<AlterAction>,
}

#[derive(Debug, Clone)]
pub enum AlterAction {
    /// ADD COLUMN; `fill` is the bound default that existing rows take (None: NULL).
    AddColumn {
        column: ColumnDef,
        if_not_exists: bool,
        fill: Option<Expr>,
    },
    DropColumn {
        name: String,
        if_exists: bool,
    },
    RenameColumn {
        from: String,
        to: String,
    },
    RenameTable(String),
    /// SET DEFAULT (Some: the default as SQL text, already checked to bind) or DROP DEFAULT.
    SetDefault {
        column: String,
        default: Option<String>,
    },
    SetNotNull {
        column: String,
        not_null: bool,
    },
    /// ALTER COLUMN TYPE: stored values converted by the assignment cast.
    SetType {
        column: String,
        ty: DataTypeDef,
    },
    AddPrimaryKey {
        columns: Vec<String>,
        name: Option<String>,
    },
    AddUnique {
        columns: Vec<String>,
        name: Option<String>,
    },
    /// ADD CHECK: its name (given or chosen) and expression, checked to bind over the
    /// table; the rows are checked when it runs.
    AddCheck {
        name: String,
        expr: String,
    },
    /// ADD FOREIGN KEY, checked against the catalog when bound (OID 0 until it runs);
    /// the rows are checked when it runs.
    AddForeignKey(crate::catalog::ForeignKeyDef),
    DropConstraint {
        name: String,
        if_exists: bool,
    },
}

/// A bound statement and what it needs of the ACLs each time it runs (`crate::acl`):
/// what runs statements keeps the two together, and reads the statement through it.
#[derive(Debug, Clone)]
pub struct BoundStatement {
    pub statement: Statement,
    pub required: Vec<crate::acl::Required>,
}

impl BoundStatement {
    /// A statement that needs no privileges (one built by the server itself).
    pub fn unchecked(statement: Statement) -> BoundStatement {
        BoundStatement {
            statement,
            required: Vec::new(),
        }
    }
}

impl std::ops::Deref for BoundStatement {
    type Target = Statement;

    fn deref(&self) -> &Statement {
        &self.statement
    }
}

/// A bound statement.
#[derive(Debug, Clone)]
pub enum Statement {
    Query(Query),
    /// Boxed, as UPDATE: bound INSERTs and UPDATEs are the largest statements by far (and
    /// binds are cached, so the box costs once per plan).
    Insert(Box<Insert>),
    Update(Box<Update>),
    Delete(Delete),
    CreateTable(CreateTable),
    CreateTableAs(Box<CreateTableAs>),
    DropTable {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    CreateRole(crate::role::CreateRole),
    /// GRANT/REVOKE role membership.
    GrantRole(crate::role::GrantRole),
    AlterRole(crate::role::AlterRole),
    DropRole {
        names: Vec<String>,
        if_exists: bool,
    },
    CreateEnum(crate::enum_type::CreateEnum),
    AddEnumValue(crate::enum_type::AddEnumValue),
    RenameEnumValue(crate::enum_type::RenameEnumValue),
    RenameType {
        name: String,
        new_name: String,
    },
    DropType {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    CreateView(crate::view::CreateView),
    DropView {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    RenameView {
        name: String,
        new_name: String,
        if_exists: bool,
    },
    /// COMMENT ON … IS: `comment` None removes it.
    Comment {
        target: CommentTarget,
        comment: Option<String>,
    },
    Truncate {
        tables: Vec<Arc<TableDef>>,
    },
    CreateSequence(crate::sequence::CreateSequence),
    AlterSequence(crate::sequence::AlterSequence),
    DropSequence {
        names: Vec<String>,
        if_exists: bool,
        cascade: bool,
    },
    CreateIndex(CreateIndex),
    DropIndex {
        names: Vec<String>,
        if_exists: bool,
    },
    AlterTable(AlterTable),
    /// GRANT or REVOKE.
    Grant(crate::grant::GrantRevoke),
    /// VACUUM [ANALYZE] or ANALYZE: `vacuum` for VACUUM (its tag), `analyze` for
    /// either with ANALYZE.
    Vacuum {
        tables: Vec<Arc<TableDef>>,
        vacuum: bool,
        analyze: bool,
    },
    Begin {
        isolation: Option<IsolationLevel>,
        read_only: Option<bool>,
    },
    Commit,
    Rollback,
    Savepoint(String),
    Release(String),
    RollbackTo(String),
    SetTransaction {
        isolation: Option<IsolationLevel>,
        read_only: Option<bool>,
    },
    /// PREPARE TRANSACTION 'gid'.
    PrepareTransaction(String),
    /// COMMIT PREPARED 'gid'.
    CommitPrepared(String),
    /// ROLLBACK PREPARED 'gid'.
    RollbackPrepared(String),
    /// SET name = value; `None` means DEFAULT. `local` for SET LOCAL; `reset` for RESET
    /// (the same as DEFAULT but for its tag).
    Set {
        name: String,
        value: Option<String>,
        local: bool,
        reset: bool,
    },
    Show {
        name: String,
    },
    CopyFrom(CopyFrom),
    CopyTo(Box<CopyTo>),
    /// SQL-level `PREPARE name [(types)] AS statement`: bound by the session as Parse
    /// binds (declared types as OIDs, 0 = inferred).
    Prepare {
        name: String,
        statement: Box<crate::parse::ParsedStatement>,
        param_types: Vec<u32>,
    },
    /// `EXECUTE name [(args)]`: the arguments are bound once the session has found the
    /// prepared statement's parameter types (`binder::bind_execute_arguments`).
    Execute {
        name: String,
        args: Vec<sqlparser::ast::Expr>,
    },
    Discard,
    /// LOCK [TABLE] name, … IN ACCESS SHARE MODE (what pg_dump takes): it conflicts only
    /// with ACCESS EXCLUSIVE, which no statement here takes, so it checks that the tables
    /// exist and holds nothing. Other lock modes are refused (0A000). (schema, name).
    LockTables(Vec<(Option<String>, String)>),
    /// CREATE or DROP EXTENSION pg_stat_statements (always loaded): only its tag.
    Extension(&'static str),
    /// DEALLOCATE [PREPARE] name | ALL (None = ALL).
    Deallocate(Option<String>),
    /// EXPLAIN of a query, INSERT, UPDATE or DELETE: not run, or run and measured with
    /// ANALYZE.
    Explain(Box<Statement>, Option<ExplainAnalyze>),
    Empty,
}

/// EXPLAIN ANALYZE's options: whether each node's times are measured (TIMING) and
/// whether the total execution time follows the plan (SUMMARY).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExplainAnalyze {
    pub timing: bool,
    pub summary: bool,
}

impl Statement {
    /// Result columns (empty for statements that return no rows); borrowed from the plan
    /// for queries, since this runs on every Bind, Describe and Execute.
    pub fn output_columns(&self) -> Cow<'_, [OutputColumn]> {
        let returning = |r: &Option<Vec<(Expr, OutputColumn)>>| {
            Cow::Owned(
                r.as_ref()
                    .map(|v| v.iter().map(|(_, c)| c.clone()).collect())
                    .unwrap_or_default(),
            )
        };
        match self {
            Statement::Query(q) => Cow::Borrowed(&q.columns),
            Statement::Insert(i) => returning(&i.returning),
            Statement::Update(u) => returning(&u.returning),
            Statement::Delete(d) => returning(&d.returning),
            Statement::Show { name } => Cow::Owned(vec![OutputColumn {
                name: name.clone(),
                ty: DataType::Text,
                table_oid: 0,
                column_attr: 0,
            }]),
            Statement::Explain(..) => Cow::Owned(vec![OutputColumn {
                name: "QUERY PLAN".into(),
                ty: DataType::Text,
                table_oid: 0,
                column_attr: 0,
            }]),
            _ => Cow::Borrowed(&[]),
        }
    }

    /// Statements allowed in a failed transaction block (they end it; PREPARE
    /// TRANSACTION rolls it back, as in PostgreSQL).
    pub fn ends_failed_transaction(&self) -> bool {
        matches!(
            self,
            Statement::Commit
                | Statement::Rollback
                | Statement::RollbackTo(_)
                | Statement::PrepareTransaction(_)
        )
    }
}

/// Visits `e` and every expression under it, subqueries' plans included.
fn visit_expr_deep<'e>(e: &'e Expr, f: &mut dyn FnMut(&'e Expr)) {
    e.visit(&mut |x| {
        f(x);
        if let Expr::Subquery { plan, .. } = x {
            plan.root.visit_exprs_deep(f);
        }
    });
}

/// Whether `Rel::Unnest` hands out the elements of `array` whole where they are arrays:
/// regexp_matches' list of matches, each a text[] (any other array of arrays is a
/// multidimensional array, whose elements are its scalars).
pub fn unnests_arrays(array: &Expr) -> bool {
    matches!(
        array,
        Expr::Func {
            func: ScalarFunc::RegexpMatches,
            ..
        }
    )
}

/// The type of the elements `Rel::Unnest` hands out of `array`.
pub fn unnest_element_type(array: &Expr) -> DataType {
    let mut ty = array.ty();
    while let DataType::Array(element) = ty {
        ty = *element;
        if unnests_arrays(array) {
            break;
        }
    }
    ty
}

impl Rel {
    /// Visits every expression of this plan tree, subqueries' plans included.
    pub fn visit_exprs_deep<'e>(&'e self, f: &mut dyn FnMut(&'e Expr)) {
        match self {
            Rel::Unit | Rel::System { .. } | Rel::WorkTable { .. } => {}
            Rel::Scan { access, .. } => access.visit_exprs_deep(f),
            Rel::PushedScan(p) => {
                p.access.visit_exprs_deep(f);
                p.work.exprs().for_each(|e| visit_expr_deep(e, f));
            }
            Rel::Values { rows } => rows.iter().flatten().for_each(|e| visit_expr_deep(e, f)),
            Rel::GenerateSeries { start, stop, step } => [start, stop]
                .into_iter()
                .chain(step.iter())
                .for_each(|e| visit_expr_deep(e, f)),
            Rel::Unnest { array } => visit_expr_deep(array, f),
            Rel::RowsFrom { functions, .. } => functions.iter().for_each(|r| r.visit_exprs_deep(f)),
            Rel::Filter { input, predicate } => {
                input.visit_exprs_deep(f);
                visit_expr_deep(predicate, f);
            }
            Rel::Project { input, exprs } => {
                input.visit_exprs_deep(f);
                exprs.iter().for_each(|e| visit_expr_deep(e, f));
            }
            Rel::Join {
                left, right, on, ..
            } => {
                left.visit_exprs_deep(f);
                right.visit_exprs_deep(f);
                on.iter().for_each(|e| visit_expr_deep(e, f));
            }
            Rel::Aggregate {
                input,
                group_by,
                aggs,
            } => {
                input.visit_exprs_deep(f);
                group_by.iter().for_each(|e| visit_expr_deep(e, f));
                aggs.iter()
                    .flat_map(|a| a.arg.iter().chain(a.filter.iter()))
                    .for_each(|e| visit_expr_deep(e, f));
            }
            Rel::Sort { input, keys } => {
                input.visit_exprs_deep(f);
                keys.iter().for_each(|k| visit_expr_deep(&k.expr, f));
            }
            Rel::Limit {
                input,
                limit,
                offset,
            } => {
                input.visit_exprs_deep(f);
                limit
                    .iter()
                    .chain(offset.iter())
                    .for_each(|e| visit_expr_deep(e, f));
            }
            Rel::Distinct { input } | Rel::Unique { input, .. } => input.visit_exprs_deep(f),
            Rel::WindowAgg { input, window } => {
                input.visit_exprs_deep(f);
                window.exprs().for_each(|e| visit_expr_deep(e, f));
            }
            Rel::Union { left, right, .. } | Rel::SetOp { left, right, .. } => {
                left.visit_exprs_deep(f);
                right.visit_exprs_deep(f);
            }
            Rel::RecursiveUnion {
                base, recursive, ..
            } => {
                base.visit_exprs_deep(f);
                recursive.visit_exprs_deep(f);
            }
        }
    }

    /// Number of columns this relation produces.
    pub fn width(&self) -> usize {
        match self {
            Rel::Unit => 0,
            Rel::Scan { table, .. } => table.columns.len(),
            Rel::PushedScan(p) => p.width(),
            Rel::System { table } => crate::system_tables::scan_columns(*table).len(),
            Rel::Values { rows } => rows.first().map_or(0, Vec::len),
            Rel::GenerateSeries { .. } => 1,
            Rel::Unnest { .. } => 1,
            Rel::RowsFrom {
                functions,
                ordinality,
            } => functions.iter().map(Rel::width).sum::<usize>() + usize::from(*ordinality),
            Rel::Project { exprs, .. } => exprs.len(),
            Rel::Join { left, right, .. } => left.width() + right.width(),
            Rel::Aggregate { group_by, aggs, .. } => group_by.len() + aggs.len(),
            Rel::Filter { input, .. }
            | Rel::Sort { input, .. }
            | Rel::Limit { input, .. }
            | Rel::Distinct { input }
            | Rel::Unique { input, .. } => input.width(),
            Rel::WindowAgg { input, window } => input.width() + window.calls.len(),
            Rel::Union { left, .. } | Rel::SetOp { left, .. } => left.width(),
            Rel::RecursiveUnion { base, .. } => base.width(),
            Rel::WorkTable { width, .. } => *width,
        }
    }
}

/// The object a COMMENT ON names (`binder/comment.rs`).
#[derive(Debug, Clone)]
pub enum CommentTarget {
    Table(Arc<TableDef>),
    /// A table's column, by position.
    Column(Arc<TableDef>, usize),
    View(Arc<crate::view::ViewDef>),
}
