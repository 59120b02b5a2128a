//! serial and identity columns of CREATE TABLE: each gets a sequence of its own
//! (`table_column_seq`, owned by the column) and the default `nextval('…'::regclass)`,
//! as in PostgreSQL; INSERT and UPDATE refuse a value for a GENERATED ALWAYS column
//! (428C9).

use super::*;
use crate::sequence::{self, ColumnSequence, Identity, SeqOption};

impl<'a> Binder<'a> {
    /// The sequence a column of a new table needs, if it is serial (`serial_type`: the
    /// integer type the pseudo-type stands for) or an identity column; sets its default
    /// and NOT NULL.
    pub(super) fn column_sequence(
        &self,
        table: &str,
        column: usize,
        col: &ast::ColumnDef,
        serial_type: Option<&DataType>,
        def: &mut ColumnDef,
    ) -> PgResult<Option<ColumnSequence>> {
        let identity = col.options.iter().find_map(|o| match &o.option {
            ast::ColumnOption::Generated {
                generated_as,
                sequence_options,
                generation_expr: None,
                ..
            } => Some((
                match generated_as {
                    ast::GeneratedAs::Always => Identity::Always,
                    _ => Identity::ByDefault,
                },
                sequence_options.as_deref().unwrap_or_default(),
            )),
            _ => None,
        });
        let has_default = col
            .options
            .iter()
            .any(|o| matches!(o.option, ast::ColumnOption::Default(_)));
        let in_table = |what: &str| {
            PgError::new(
                codes::SYNTAX_ERROR,
                format!(
                    "{what} specified for column \"{}\" of table \"{table}\"",
                    def.name
                ),
            )
        };
        let ty = def.ty.to_type();
        let (options, identity) = match (serial_type, identity) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => return Err(in_table("both default and identity")),
            (Some(_), None) if has_default => return Err(in_table("multiple default values")),
            (None, Some(_)) if has_default => return Err(in_table("both default and identity")),
            (Some(_), None) => (Vec::new(), None),
            (None, Some((kind, options))) => {
                if !matches!(ty, DataType::Int2 | DataType::Int4 | DataType::Int8) {
                    return Err(PgError::new(
                        codes::INVALID_PARAMETER_VALUE,
                        "identity column type must be smallint, integer, or bigint",
                    ));
                }
                (sequence::identity_options(options)?, Some(kind))
            }
        };
        let name = sequence::column_sequence_name(table, &def.name);
        def.not_null = true;
        def.default = Some(sequence::nextval_default(&name));
        let mut options = options;
        options.push(SeqOption::As(ty.oid()));
        Ok(Some(ColumnSequence {
            column,
            name,
            options,
            identity,
        }))
    }

    /// 428C9 for an UPDATE setting a GENERATED ALWAYS column to anything but DEFAULT.
    pub(super) fn check_always_updated(&self, table: &TableDef, column: usize) -> PgResult<()> {
        if self.catalog.identity(table.oid, column) == Some(Identity::Always) {
            let name = &table.columns[column].name;
            return Err(PgError::new(
                codes::GENERATED_ALWAYS,
                format!("column \"{name}\" can only be updated to DEFAULT"),
            )
            .with_detail(format!(
                "Column \"{name}\" is an identity column defined as GENERATED ALWAYS."
            )));
        }
        Ok(())
    }

    /// 428C9 for a value given to a GENERATED ALWAYS column (`columns`: the INSERT's
    /// target columns that receive a value other than DEFAULT).
    pub(super) fn check_generated_always(
        &self,
        table: &TableDef,
        columns: impl IntoIterator<Item = usize>,
    ) -> PgResult<()> {
        for c in columns {
            if self.catalog.identity(table.oid, c) == Some(Identity::Always) {
                let name = &table.columns[c].name;
                return Err(PgError::new(
                    codes::GENERATED_ALWAYS,
                    format!("cannot insert a non-DEFAULT value into column \"{name}\""),
                )
                .with_detail(format!(
                    "Column \"{name}\" is an identity column defined as GENERATED ALWAYS."
                ))
                .with_hint("Use OVERRIDING SYSTEM VALUE to override."));
            }
        }
        Ok(())
    }
}
