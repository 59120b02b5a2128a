//! Views: the definition the catalog stores (`ViewDef`: the query as SQL text, bound
//! afresh wherever the view is named, as a subquery with the view's column names), the
//! statements that create, drop and rename them, and PostgreSQL's rules for CREATE OR
//! REPLACE VIEW. ALTER VIEW … RENAME TO, which sqlparser does not read, is read here.

use crate::catalog::DataTypeDef;
use crate::plan::Statement;
use pgerror::{codes, PgError, PgResult};
use serde::{Deserialize, Serialize};
use sqlparser::ast;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ViewDef {
    pub oid: u32,
    pub name: String,
    pub columns: Vec<ViewColumn>,
    /// The defining query as SQL text.
    pub query: String,
    /// The tables and views the query names (OIDs): dropping one of them needs CASCADE,
    /// which drops this view too.
    pub reads: Vec<u32>,
    /// The role that owns the view (pg_class.relowner): its creator.
    #[serde(default = "crate::role::bootstrap_owner")]
    pub owner: u32,
    /// Its privileges (pg_class.relacl); None until the first GRANT or REVOKE, when the
    /// owner holds them all (`crate::acl`).
    #[serde(default)]
    pub acl: Option<Vec<crate::acl::AclItem>>,
    /// COMMENT ON VIEW (pg_description, obj_description).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ViewColumn {
    pub name: String,
    pub ty: DataTypeDef,
}

/// `CREATE [OR REPLACE] VIEW`, bound: the columns as the query gives them (renamed by the
/// column list).
#[derive(Debug, Clone)]
pub struct CreateView {
    pub name: String,
    pub or_replace: bool,
    pub columns: Vec<ViewColumn>,
    pub query: String,
    pub reads: Vec<u32>,
}

/// The defining query of a stored view, parsed again.
pub fn parse_query(text: &str) -> PgResult<ast::Query> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_query())
        .map(|q| *q)
        .map_err(|e| {
            PgError::new(
                codes::DATA_CORRUPTED,
                format!("stored view definition unreadable: {e}"),
            )
        })
}

fn replace_error(message: String) -> PgError {
    PgError::new(codes::INVALID_TABLE_DEFINITION, message)
}

impl ViewDef {
    /// CREATE OR REPLACE VIEW keeps every existing column, with its name and type, in its
    /// place; new columns may only follow them (PostgreSQL's checks and messages).
    pub fn check_replacement(&self, new: &[ViewColumn]) -> PgResult<()> {
        if new.len() < self.columns.len() {
            return Err(replace_error("cannot drop columns from view".into()));
        }
        for (old, new) in self.columns.iter().zip(new) {
            if old.name != new.name {
                return Err(replace_error(format!(
                    "cannot change name of view column \"{}\" to \"{}\"",
                    old.name, new.name
                ))
                .with_hint(
                    "Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.",
                ));
            }
            let (old_ty, new_ty) = (old.ty.to_type(), new.ty.to_type());
            if old_ty != new_ty {
                return Err(replace_error(format!(
                    "cannot change data type of view column \"{}\" from {} to {}",
                    old.name, old_ty, new_ty
                )));
            }
        }
        Ok(())
    }
}

/// `ALTER VIEW [IF EXISTS] name RENAME TO new_name`; None for any other text.
pub fn parse_rename(text: &str) -> PgResult<Option<Statement>> {
    let tokens = match sqlparser::tokenizer::Tokenizer::new(&PostgreSqlDialect {}, text).tokenize()
    {
        Ok(tokens) => tokens,
        Err(_) => return Ok(None),
    };
    use sqlparser::tokenizer::Token;
    let words: Vec<&Token> = tokens
        .iter()
        .filter(|t| !matches!(t, Token::Whitespace(_) | Token::SemiColon))
        .collect();
    let keyword = |t: &Token, k: &str| matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k));
    let name = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_some() => Some(w.value.clone()),
        Token::Word(w) => Some(w.value.to_ascii_lowercase()),
        _ => None,
    };
    let (if_exists, rest) = match words.as_slice() {
        [a, v, i, e, rest @ ..]
            if keyword(a, "alter")
                && keyword(v, "view")
                && keyword(i, "if")
                && keyword(e, "exists") =>
        {
            (true, rest)
        }
        [a, v, rest @ ..] if keyword(a, "alter") && keyword(v, "view") => (false, rest),
        _ => return Ok(None),
    };
    match rest {
        [old, r, t, new] if keyword(r, "rename") && keyword(t, "to") => {
            match (name(old), name(new)) {
                (Some(name), Some(new_name)) => Ok(Some(Statement::RenameView {
                    name,
                    new_name,
                    if_exists,
                })),
                _ => Ok(None),
            }
        }
        _ => Err(PgError::unsupported("ALTER VIEW other than RENAME TO")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rename_is_read_with_quoting() {
        let Some(Statement::RenameView {
            name,
            new_name,
            if_exists,
        }) = parse_rename("ALTER VIEW IF EXISTS V1 rename to \"New\";").unwrap()
        else {
            panic!("not a rename");
        };
        assert_eq!(
            (name.as_str(), new_name.as_str(), if_exists),
            ("v1", "New", true)
        );
        assert!(parse_rename("ALTER TABLE t RENAME TO u").unwrap().is_none());
        assert!(parse_rename("ALTER VIEW v ALTER COLUMN a SET DEFAULT 1").is_err());
    }

    #[test]
    fn replacement_keeps_names_and_types() {
        let col = |name: &str, oid| ViewColumn {
            name: name.into(),
            ty: DataTypeDef { oid, typmod: -1 },
        };
        let view = ViewDef {
            oid: 1,
            name: "v".into(),
            columns: vec![col("a", 23)],
            query: String::new(),
            reads: Vec::new(),
            owner: crate::role::bootstrap_owner(),
            acl: None,
            comment: None,
        };
        assert!(view
            .check_replacement(&[col("a", 23), col("b", 25)])
            .is_ok());
        assert_eq!(view.check_replacement(&[]).unwrap_err().code, "42P16");
        assert_eq!(
            view.check_replacement(&[col("b", 23)]).unwrap_err().code,
            "42P16"
        );
        assert_eq!(
            view.check_replacement(&[col("a", 25)]).unwrap_err().code,
            "42P16"
        );
    }
}
