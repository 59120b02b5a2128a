//! A bound expression printed as PostgreSQL's `pg_get_constraintdef` prints a CHECK
//! constraint's (ruleutils.c): every operation in parentheses, or with `pretty` only
//! where precedence needs them (psql's `\d`); implicit casts shown, except between
//! integer widths (PostgreSQL has cross-width integer operators, so it has no cast
//! there) and those that only drop a type modifier; constants labelled with their type
//! unless they read back as it.

use crate::catalog::ColumnDef;
use crate::plan::Expr;
use types::ops::BinaryOp;
use types::{DataType, Value};

/// `e`, read over a row of `columns`.
pub fn deparse(e: &Expr, columns: &[ColumnDef], pretty: bool) -> String {
    Deparser { columns, pretty }.expr(e)
}

/// The columns (positions in the row) that `e` reads, in order, each once.
pub fn columns_read(e: &Expr) -> Vec<usize> {
    let mut out = Vec::new();
    e.visit(&mut |x| {
        if let Expr::Column {
            depth: 0, index, ..
        } = x
        {
            out.push(*index);
        }
    });
    out.sort_unstable();
    out.dedup();
    out
}

struct Deparser<'c> {
    columns: &'c [ColumnDef],
    pretty: bool,
}

/// What ruleutils' `isSimpleNode` distinguishes of a node.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Columns, constants, function calls, casts: never parenthesized.
    Simple,
    /// `+ -` and `* / %`: parenthesized by precedence inside one another.
    LowArith,
    HighArith,
    /// Other operators, IS [NOT] NULL, IS DISTINCT FROM.
    Operator,
    /// `= ANY (…)`: parenthesized wherever it is an operand.
    ArrayOp,
    And,
    Or,
    Not,
}

fn kind(e: &Expr) -> Kind {
    match e {
        Expr::Binary { op, .. } => match op {
            BinaryOp::Add | BinaryOp::Sub => Kind::LowArith,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod => Kind::HighArith,
            _ => Kind::Operator,
        },
        Expr::Unary { .. } | Expr::IsNull { .. } | Expr::IsDistinctFrom { .. } => Kind::Operator,
        Expr::InList { .. } | Expr::AnyArray { .. } => Kind::ArrayOp,
        Expr::And(..) => Kind::And,
        Expr::Or(..) => Kind::Or,
        Expr::Not(_) => Kind::Not,
        Expr::Cast { operand, .. } if invisible_cast(e) => kind(operand),
        _ => Kind::Simple,
    }
}

/// Where an operand stands, for `isSimpleNode`.
#[derive(Clone, Copy)]
enum Parent {
    /// A binary operator's left or right operand.
    Operator {
        kind: Kind,
        left: bool,
    },
    Bool(Kind),
    /// A cast's operand.
    Cast,
    /// An argument of a function, CASE, COALESCE, ARRAY[…]: no parentheses needed.
    List,
}

fn simple_in(child: Kind, parent: Parent) -> bool {
    use Kind::*;
    match (child, parent) {
        (Simple, _) | (_, Parent::List) => true,
        (LowArith | HighArith, Parent::Operator { kind, left }) => match (child, kind) {
            (HighArith, LowArith) => true,
            (LowArith, LowArith) => left,
            _ => false,
        },
        (LowArith | HighArith | Operator, Parent::Bool(_)) => true,
        (Not | And, Parent::Bool(And | Or)) => true,
        (Or, Parent::Bool(Or)) => true,
        _ => false,
    }
}

/// An implicit cast PostgreSQL has no need of: from one integer width to another, or
/// only dropping a type modifier (`numeric(4,1)` to `numeric`).
fn invisible_cast(e: &Expr) -> bool {
    matches!(e, Expr::Cast { from, to, explicit: false, .. }
        if from.is_integer() && to.is_integer() || from.oid() == to.oid())
}

impl Deparser<'_> {
    /// `e` as an operand of `parent`: parenthesized in pretty mode where it is not
    /// simple there (without `pretty` every operation brings its own).
    fn operand(&self, e: &Expr, parent: Parent) -> String {
        let text = self.expr(e);
        if self.pretty && !simple_in(kind(e), parent) {
            format!("({text})")
        } else {
            text
        }
    }

    /// An operation's text, in parentheses unless pretty.
    fn wrap(&self, text: String) -> String {
        if self.pretty {
            text
        } else {
            format!("({text})")
        }
    }

    fn list(&self, es: &[Expr]) -> String {
        es.iter()
            .map(|e| self.operand(e, Parent::List))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn expr(&self, e: &Expr) -> String {
        match e {
            // An integer literal where a numeric or float was wanted: PostgreSQL casts it.
            Expr::Const(
                v,
                ty @ (DataType::Numeric { .. } | DataType::Float4 | DataType::Float8),
            ) if types::io::to_text_string(v, ty)
                .is_some_and(|t| t.bytes().all(|b| b.is_ascii_digit())) =>
            {
                let digits = types::io::to_text_string(v, ty).unwrap_or_default();
                let digits = if self.pretty {
                    digits
                } else {
                    format!("({digits})")
                };
                format!("{digits}::{}", ty.format_type())
            }
            Expr::Const(v, ty) => constant(v, ty),
            Expr::Param { index, .. } => format!("${}", index + 1),
            Expr::Column { index, .. } => self
                .columns
                .get(*index)
                .map_or_else(|| format!("column{}", index + 1), |c| quote_ident(&c.name)),
            Expr::Binary {
                op, left, right, ..
            } => {
                let k = kind(e);
                let l = self.operand(
                    left,
                    Parent::Operator {
                        kind: k,
                        left: true,
                    },
                );
                let r = self.operand(
                    right,
                    Parent::Operator {
                        kind: k,
                        left: false,
                    },
                );
                self.wrap(format!("{l} {} {r}", op.symbol()))
            }
            Expr::Unary { op, operand, .. } => {
                let op = op.symbol();
                let parent = Parent::Operator {
                    kind: Kind::Operator,
                    left: false,
                };
                self.wrap(format!("{op} {}", self.operand(operand, parent)))
            }
            Expr::And(..) | Expr::Or(..) => {
                let k = kind(e);
                // The parser makes `a AND b AND c` one node of three arguments.
                let mut args = Vec::new();
                let mut left = e;
                while let (Kind::And, Expr::And(l, r)) | (Kind::Or, Expr::Or(l, r)) = (k, left) {
                    args.push(r.as_ref());
                    left = l;
                }
                args.push(left);
                args.reverse();
                let word = if k == Kind::And { " AND " } else { " OR " };
                let text = args
                    .iter()
                    .map(|a| self.operand(a, Parent::Bool(k)))
                    .collect::<Vec<_>>()
                    .join(word);
                self.wrap(text)
            }
            Expr::Not(a) => self.wrap(format!("NOT {}", self.operand(a, Parent::Bool(Kind::Not)))),
            Expr::IsNull { operand, negated } => {
                let o = self.operand(
                    operand,
                    Parent::Operator {
                        kind: Kind::Operator,
                        left: true,
                    },
                );
                self.wrap(format!("{o} IS {}NULL", if *negated { "NOT " } else { "" }))
            }
            Expr::IsDistinctFrom {
                left,
                right,
                negated,
            } => {
                let parent = |left| Parent::Operator {
                    kind: Kind::Operator,
                    left,
                };
                let l = self.operand(left, parent(true));
                let r = self.operand(right, parent(false));
                let not = if *negated { "NOT " } else { "" };
                self.wrap(format!("{l} IS {not}DISTINCT FROM {r}"))
            }
            Expr::Cast { operand, .. } if invisible_cast(e) => self.expr(operand),
            Expr::Cast { operand, to, .. } => {
                let inner = match operand.as_ref() {
                    // A literal read as its type when the plan runs (DateStyle, TimeZone)
                    // shows as PostgreSQL shows the literal it reads at parse time.
                    Expr::Const(v, ty) if ty == to || *ty == DataType::Unknown => {
                        bare_constant(v, ty)
                    }
                    o if self.pretty => self.operand(o, Parent::Cast),
                    o => format!("({})", self.expr(o)),
                };
                format!("{inner}::{}", to.format_type())
            }
            Expr::Func { func, args, .. } => {
                format!(
                    "{}({})",
                    crate::explain::snake(&format!("{func:?}")),
                    self.list(args)
                )
            }
            Expr::Coalesce { args, .. } => format!("COALESCE({})", self.list(args)),
            Expr::Array { elements, .. } => format!("ARRAY[{}]", self.list(elements)),
            Expr::Case {
                operand,
                whens,
                otherwise,
                ..
            } => {
                let mut s = "\nCASE".to_string();
                if let Some(o) = operand {
                    s += &format!(" {}", self.operand(o, Parent::List));
                }
                for (w, t) in whens {
                    let w = self.operand(w, Parent::List);
                    s += &format!("\n    WHEN {w} THEN {}", self.operand(t, Parent::List));
                }
                if let Some(o) = otherwise {
                    s += &format!("\n    ELSE {}", self.operand(o, Parent::List));
                }
                s + "\nEND"
            }
            // PostgreSQL's parser makes `x IN (…)` `x = ANY (ARRAY[…])`.
            Expr::InList {
                operand,
                list,
                negated,
            } => {
                let (op, quantifier) = if *negated {
                    ("<>", "ALL")
                } else {
                    ("=", "ANY")
                };
                let l = self.operand(
                    operand,
                    Parent::Operator {
                        kind: Kind::Operator,
                        left: true,
                    },
                );
                self.wrap(format!(
                    "{l} {op} {quantifier} (ARRAY[{}])",
                    self.list(list)
                ))
            }
            Expr::AnyArray {
                op,
                left,
                array,
                all,
            } => {
                let l = self.operand(
                    left,
                    Parent::Operator {
                        kind: Kind::Operator,
                        left: true,
                    },
                );
                let quantifier = if *all { "ALL" } else { "ANY" };
                let a = self.operand(array, Parent::List);
                self.wrap(format!("{l} {} {quantifier} ({a})", op.symbol()))
            }
            // Refused in CHECK constraints; not printed.
            Expr::Subquery { .. } => "(SubPlan)".into(),
        }
    }
}

/// A constant as ruleutils' `get_const_expr` prints it: integers, decimal numerics and
/// booleans bare, everything else quoted and labelled with its type.
fn constant(v: &Value, ty: &DataType) -> String {
    let text = bare_constant(v, ty);
    let bare = match ty {
        DataType::Int2 | DataType::Int4 | DataType::Int8 => !text.starts_with('\''),
        DataType::Bool => true,
        DataType::Numeric { .. } => text.contains(['.', 'e', 'E']) && !text.starts_with('\''),
        _ => false,
    };
    if bare || v.is_null() && *ty == DataType::Unknown {
        text
    } else {
        format!("{text}::{}", ty.format_type())
    }
}

/// A constant without its type label.
fn bare_constant(v: &Value, ty: &DataType) -> String {
    if v.is_null() {
        return "NULL".into();
    }
    let text = types::io::to_text_string(v, ty).unwrap_or_default();
    match ty {
        DataType::Int4 | DataType::Numeric { .. } if !text.starts_with('-') => text,
        // PostgreSQL reads an integer literal as int4 where it fits, and compares it
        // with other integer widths without a cast.
        DataType::Int2 | DataType::Int8
            if v.as_i64()
                .is_some_and(|i| (0..=i64::from(i32::MAX)).contains(&i)) =>
        {
            text
        }
        DataType::Bool if text == "t" => "true".into(),
        DataType::Bool => "false".into(),
        _ => format!("'{}'", text.replace('\'', "''")),
    }
}

/// A name as PostgreSQL's `quote_identifier` writes it: bare when lower case letters,
/// digits and underscores not starting with a digit and not a keyword PostgreSQL
/// reserves in any way, else double-quoted.
pub fn quote_ident(name: &str) -> String {
    let plain = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain && NON_UNRESERVED_KEYWORDS.binary_search(&name).is_err() {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// PostgreSQL 15's keywords that are not unreserved (`pg_get_keywords()` with catcode C,
/// T or R), sorted: an identifier spelled as one is quoted, as quote_identifier does.
const NON_UNRESERVED_KEYWORDS: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "table",
    "tablesample",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_sorted_for_binary_search() {
        assert!(NON_UNRESERVED_KEYWORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn keywords_and_unsafe_names_are_quoted() {
        assert_eq!(quote_ident("user"), "\"user\"");
        assert_eq!(quote_ident("xmltable"), "\"xmltable\"");
        assert_eq!(quote_ident("name"), "name"); // unreserved
        assert_eq!(quote_ident("Mixed"), "\"Mixed\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
