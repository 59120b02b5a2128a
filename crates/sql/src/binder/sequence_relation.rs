//! A sequence read as a relation, `SELECT last_value, log_cnt, is_called FROM seq`, as
//! pg_dump reads one: a single row computed when the statement runs (the last value any
//! coordinator reserved; decision 0034), log_cnt always 0.

use super::*;

impl Binder<'_> {
    /// The one-row relation of sequence `parts`, if it names one (tried when no table
    /// has that name).
    pub(super) fn sequence_relation(
        &mut self,
        parts: &[String],
    ) -> Option<(Rel, Vec<ScopeColumn>, String)> {
        let name = match parts {
            [name] => name,
            [schema, name] if schema == "public" => name,
            _ => return None,
        };
        let def = self.catalog.sequence(name)?;
        self.require(
            crate::acl::Object::Sequence(def.clone()),
            crate::acl::SELECT,
        );
        let oid = const_expr(Value::Oid(def.oid), DataType::Oid);
        let state = |func, ty: DataType| Expr::Func {
            func,
            args: vec![oid.clone()],
            ty,
        };
        let column = |name: &str, ty: DataType, attnum| ScopeColumn {
            qualifier: Some(def.name.clone()),
            name: name.to_string(),
            ty,
            table_oid: def.oid,
            attnum,
            merged_away: false,
            scalar_function: false,
            system: false,
        };
        let rel = Rel::Project {
            input: Box::new(Rel::Unit),
            exprs: vec![
                state(ScalarFunc::SequenceLastValue, DataType::Int8),
                const_expr(Value::Int8(0), DataType::Int8),
                state(ScalarFunc::SequenceIsCalled, DataType::Bool),
            ],
        };
        let columns = vec![
            column("last_value", DataType::Int8, 1),
            column("log_cnt", DataType::Int8, 2),
            column("is_called", DataType::Bool, 3),
        ];
        Some((rel, columns, def.name.clone()))
    }
}
