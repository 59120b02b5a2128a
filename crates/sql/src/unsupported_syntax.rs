//! The parts of sqlparser's AST that binding does not implement: each is refused with
//! 0A000 naming it, so that no clause is silently ignored.
//!
//! Every check destructures its node without `..`: a field added by a sqlparser upgrade
//! fails to compile here until someone decides whether binding reads it or refuses it.
//! Fields only other dialects produce are refused too (the parser is shared).

use pgerror::{codes, PgError, PgResult};
use sqlparser::ast;

fn unsupported(what: impl std::fmt::Display) -> PgError {
    PgError::unsupported(what)
}

/// Refuse `what` when `present`.
fn refuse_if(present: bool, what: &str) -> PgResult<()> {
    if present {
        Err(unsupported(what))
    } else {
        Ok(())
    }
}

/// Query-level clauses: the binder reads `with`, `body`, `order_by`, `limit_clause` and
/// `fetch` (FIRST n ROWS ONLY).
pub fn query(q: &ast::Query) -> PgResult<()> {
    let ast::Query {
        with,
        body: _,
        order_by,
        limit_clause,
        fetch,
        locks,
        for_clause,
        settings,
        format_clause,
        pipe_operators,
    } = q;
    if let Some(ast::With {
        with_token: _,
        recursive: _,
        cte_tables,
    }) = with
    {
        for cte in cte_tables {
            // MATERIALIZED / NOT MATERIALIZED only steer PostgreSQL's planner.
            let ast::Cte {
                alias,
                query: _,
                from,
                materialized: _,
                closing_paren_token: _,
            } = cte;
            table_alias(alias)?;
            refuse_if(from.is_some(), "CTE … FROM")?;
        }
    }
    if let Some(ast::OrderBy { kind, interpolate }) = order_by {
        refuse_if(interpolate.is_some(), "ORDER BY … INTERPOLATE")?;
        if let ast::OrderByKind::Expressions(exprs) = kind {
            exprs.iter().try_for_each(order_by_expr)?;
        }
    }
    if let Some(ast::LimitClause::LimitOffset {
        limit: _,
        offset: _,
        limit_by,
    }) = limit_clause
    {
        refuse_if(!limit_by.is_empty(), "LIMIT … BY")?;
    }
    if let Some(ast::Fetch {
        with_ties,
        percent,
        quantity: _,
    }) = fetch
    {
        refuse_if(*with_ties, "FETCH … WITH TIES")?;
        refuse_if(*percent, "FETCH … PERCENT")?;
        let limit = matches!(
            limit_clause,
            Some(
                ast::LimitClause::LimitOffset { limit: Some(_), .. }
                    | ast::LimitClause::OffsetCommaLimit { .. }
            )
        );
        refuse_if(limit, "LIMIT together with FETCH")?;
    }
    // Row locks: the binder reads every field (`binder::locking`).
    let _ = locks;
    refuse_if(for_clause.is_some(), "FOR XML/JSON/BROWSE")?;
    refuse_if(settings.is_some(), "SETTINGS")?;
    refuse_if(format_clause.is_some(), "FORMAT")?;
    refuse_if(!pipe_operators.is_empty(), "pipe operators")
}

/// ORDER BY items: the binder reads the expression, ASC/DESC and NULLS FIRST/LAST.
pub fn order_by_expr(o: &ast::OrderByExpr) -> PgResult<()> {
    let ast::OrderByExpr {
        expr: _,
        options: ast::OrderByOptions {
            sort,
            nulls_first: _,
        },
        with_fill,
    } = o;
    refuse_if(
        matches!(sort, Some(ast::OrderBySort::Using(_))),
        "ORDER BY … USING",
    )?;
    refuse_if(with_fill.is_some(), "ORDER BY … WITH FILL")
}

/// SELECT clauses: the binder reads DISTINCT (not ON), the select list, FROM, WHERE,
/// GROUP BY (plain expressions) and HAVING.
pub fn select(sel: &ast::Select) -> PgResult<()> {
    let ast::Select {
        select_token: _,
        optimizer_hints,
        distinct: _, // DISTINCT and DISTINCT ON: read by the binder
        select_modifiers,
        top,
        top_before_distinct: _,
        projection,
        exclude,
        into,
        from: _,
        lateral_views,
        prewhere,
        selection: _,
        connect_by,
        group_by,
        cluster_by,
        distribute_by,
        sort_by,
        having: _,
        named_window: _, // the WINDOW clause: read by the binder (binder/window.rs)
        qualify,
        window_before_qualify: _,
        value_table_mode,
        flavor: _,
    } = sel;
    refuse_if(!optimizer_hints.is_empty(), "optimizer hints")?;
    refuse_if(select_modifiers.is_some(), "SELECT modifiers")?;
    refuse_if(top.is_some(), "SELECT TOP")?;
    for item in projection {
        match item {
            ast::SelectItem::UnnamedExpr(_) | ast::SelectItem::ExprWithAlias { .. } => {}
            ast::SelectItem::ExprWithAliases { .. } => {
                return Err(unsupported("several aliases for one select-list item"))
            }
            ast::SelectItem::Wildcard(options) | ast::SelectItem::QualifiedWildcard(_, options) => {
                wildcard_options(options)?
            }
        }
    }
    refuse_if(exclude.is_some(), "SELECT … EXCLUDE")?;
    refuse_if(into.is_some(), "SELECT … INTO")?;
    refuse_if(!lateral_views.is_empty(), "LATERAL VIEW")?;
    refuse_if(prewhere.is_some(), "PREWHERE")?;
    refuse_if(!connect_by.is_empty(), "CONNECT BY")?;
    match group_by {
        ast::GroupByExpr::All(_) => return Err(unsupported("GROUP BY ALL")),
        ast::GroupByExpr::Expressions(exprs, modifiers) => {
            refuse_if(!modifiers.is_empty(), "GROUP BY … WITH ROLLUP/CUBE/TOTALS")?;
            for e in exprs {
                match e {
                    ast::Expr::Rollup(_) => return Err(unsupported("GROUP BY ROLLUP")),
                    ast::Expr::Cube(_) => return Err(unsupported("GROUP BY CUBE")),
                    ast::Expr::GroupingSets(_) => {
                        return Err(unsupported("GROUP BY GROUPING SETS"))
                    }
                    ast::Expr::Tuple(_) => return Err(unsupported("GROUP BY (a, b) row groups")),
                    _ => {}
                }
            }
        }
    }
    refuse_if(!cluster_by.is_empty(), "CLUSTER BY")?;
    refuse_if(!distribute_by.is_empty(), "DISTRIBUTE BY")?;
    refuse_if(!sort_by.is_empty(), "SORT BY")?;
    refuse_if(qualify.is_some(), "QUALIFY")?;
    refuse_if(value_table_mode.is_some(), "SELECT AS STRUCT/VALUE")
}

fn wildcard_options(o: &ast::WildcardAdditionalOptions) -> PgResult<()> {
    let ast::WildcardAdditionalOptions {
        wildcard_token: _,
        opt_ilike,
        opt_exclude,
        opt_except,
        opt_replace,
        opt_rename,
        opt_alias,
    } = o;
    refuse_if(
        opt_ilike.is_some()
            || opt_exclude.is_some()
            || opt_except.is_some()
            || opt_replace.is_some()
            || opt_rename.is_some()
            || opt_alias.is_some(),
        "options after *",
    )
}

/// VALUES: the binder reads the rows.
pub fn values(v: &ast::Values) -> PgResult<()> {
    let ast::Values {
        explicit_row,
        value_keyword,
        rows: _,
    } = v;
    refuse_if(*explicit_row, "VALUES ROW(…)")?;
    refuse_if(*value_keyword, "VALUE")
}

/// `AS name (columns)`: column types belong to functions returning records.
pub fn table_alias(a: &ast::TableAlias) -> PgResult<()> {
    let ast::TableAlias {
        explicit: _,
        name: _,
        columns,
        at,
    } = a;
    refuse_if(at.is_some(), "AT in a table alias")?;
    for c in columns {
        let ast::TableAliasColumnDef { name: _, data_type } = c;
        refuse_if(data_type.is_some(), "column definition lists")?;
    }
    Ok(())
}

/// FROM items: the binder reads names, aliases, LATERAL, and the arguments of table
/// functions; a nested join's alias may not rename its columns.
pub fn table_factor(tf: &ast::TableFactor) -> PgResult<()> {
    match tf {
        ast::TableFactor::Table {
            name: _,
            alias,
            args,
            with_hints,
            version,
            with_ordinality,
            partitions,
            json_path,
            sample,
            index_hints,
        } => {
            if let Some(alias) = alias {
                table_alias(alias)?;
            }
            if let Some(ast::TableFunctionArgs { args: _, settings }) = args {
                refuse_if(settings.is_some(), "SETTINGS")?;
            }
            refuse_if(!with_hints.is_empty(), "table hints")?;
            refuse_if(version.is_some(), "time travel (FOR SYSTEM_TIME / AT)")?;
            // read by `Binder::table_function`
            let _ = with_ordinality;
            refuse_if(!partitions.is_empty(), "PARTITION selection")?;
            refuse_if(json_path.is_some(), "JSON paths in FROM")?;
            refuse_if(sample.is_some(), "TABLESAMPLE")?;
            refuse_if(!index_hints.is_empty(), "index hints")
        }
        ast::TableFactor::Derived {
            lateral: _,
            subquery: _,
            alias,
            sample,
        } => {
            if let Some(alias) = alias {
                table_alias(alias)?;
            }
            refuse_if(sample.is_some(), "TABLESAMPLE")
        }
        ast::TableFactor::Function {
            lateral: _,
            name: _,
            args: _,
            with_ordinality: _,
            alias,
        } => match alias {
            Some(alias) => table_alias(alias),
            None => Ok(()),
        },
        ast::TableFactor::UNNEST {
            alias,
            array_exprs,
            with_offset,
            with_offset_alias: _,
            with_ordinality,
        } => {
            if let Some(alias) = alias {
                table_alias(alias)?;
            }
            // WITH ORDINALITY and several arrays are read by `Binder::unnest_function`
            let _ = (with_ordinality, array_exprs);
            refuse_if(*with_offset, "UNNEST … WITH OFFSET")
        }
        ast::TableFactor::NestedJoin {
            table_with_joins: _,
            alias,
        } => refuse_if(
            alias.as_ref().is_some_and(|a| !a.columns.is_empty()),
            "column aliases for a parenthesized join",
        ),
        _ => Err(unsupported("this kind of FROM item")),
    }
}

/// Joins: the binder reads the joined item and [INNER] / LEFT / RIGHT [OUTER] / CROSS.
pub fn join(j: &ast::Join) -> PgResult<()> {
    let ast::Join {
        relation: _,
        global,
        join_operator,
    } = j;
    refuse_if(*global, "GLOBAL JOIN")?;
    match join_operator {
        ast::JoinOperator::Join(_)
        | ast::JoinOperator::Inner(_)
        | ast::JoinOperator::Left(_)
        | ast::JoinOperator::LeftOuter(_)
        | ast::JoinOperator::Right(_)
        | ast::JoinOperator::RightOuter(_)
        | ast::JoinOperator::FullOuter(_) => Ok(()),
        ast::JoinOperator::CrossJoin(c) => refuse_if(
            !matches!(c, ast::JoinConstraint::None),
            "CROSS JOIN with a join condition",
        ),
        _ => Err(unsupported("this join type")),
    }
}

/// A call of a function that is not a (known) aggregate: plain arguments only. Returns
/// the aggregate-only clause it has (FILTER, DISTINCT, ORDER BY), which is an error
/// once the function is known to be a plain one (42809, as PostgreSQL).
pub fn scalar_call(f: &ast::Function) -> PgResult<Option<&'static str>> {
    let ast::Function {
        name,
        uses_odbc_syntax,
        parameters,
        args,
        within_group,
        filter,
        null_treatment,
        over: _, // a call with OVER is a window call (binder/window.rs)
    } = f;
    refuse_if(*uses_odbc_syntax, "ODBC function call syntax")?;
    refuse_if(
        !matches!(parameters, ast::FunctionArguments::None),
        "parametric functions",
    )?;
    refuse_if(null_treatment.is_some(), "IGNORE/RESPECT NULLS")?;
    refuse_within_group(name, within_group)?;
    let mut aggregate_clause = filter.is_some().then_some("FILTER");
    if let ast::FunctionArguments::List(ast::FunctionArgumentList {
        duplicate_treatment,
        args: _,
        clauses,
    }) = args
    {
        if matches!(duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)) {
            aggregate_clause = Some("DISTINCT");
        }
        if clauses
            .iter()
            .any(|c| matches!(c, ast::FunctionArgumentClause::OrderBy(_)))
        {
            aggregate_clause = Some("ORDER BY");
        }
        refuse_if(
            clauses
                .iter()
                .any(|c| !matches!(c, ast::FunctionArgumentClause::OrderBy(_))),
            "clauses inside a function's argument list",
        )?;
    }
    Ok(aggregate_clause)
}

/// A call of a ranking or value window function: plain arguments only (the binder
/// reads its OVER, and refuses its FILTER as PostgreSQL does).
pub fn window_function_call(f: &ast::Function) -> PgResult<()> {
    let ast::Function {
        name,
        uses_odbc_syntax,
        parameters,
        args,
        within_group,
        filter: _,
        null_treatment,
        over: _,
    } = f;
    refuse_if(*uses_odbc_syntax, "ODBC function call syntax")?;
    refuse_if(
        !matches!(parameters, ast::FunctionArguments::None),
        "parametric functions",
    )?;
    refuse_if(null_treatment.is_some(), "IGNORE/RESPECT NULLS")?;
    refuse_within_group(name, within_group)?;
    if let ast::FunctionArguments::List(ast::FunctionArgumentList {
        duplicate_treatment,
        args: _,
        clauses,
    }) = args
    {
        if matches!(duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)) {
            return Err(PgError::new(
                codes::FEATURE_NOT_SUPPORTED,
                "DISTINCT is not implemented for window functions",
            ));
        }
        if !clauses.is_empty() {
            return Err(PgError::new(
                codes::FEATURE_NOT_SUPPORTED,
                "aggregate ORDER BY is not implemented for window functions",
            ));
        }
    }
    Ok(())
}

/// A `WITHIN GROUP` on a function that is not an ordered-set aggregate: the
/// hypothetical-set aggregates (rank, dense_rank, percent_rank, cume_dist) are not
/// implemented (0A000); any other function is looked up by PostgreSQL with the WITHIN
/// GROUP arguments after the others, which finds none (42883).
fn refuse_within_group(name: &ast::ObjectName, within_group: &[ast::OrderByExpr]) -> PgResult<()> {
    if within_group.is_empty() {
        return Ok(());
    }
    let name = name.to_string().to_ascii_lowercase();
    let name = name
        .rsplit('.')
        .next()
        .unwrap_or_default()
        .trim_matches('"');
    if matches!(name, "rank" | "dense_rank" | "percent_rank" | "cume_dist") {
        return Err(unsupported(format!(
            "WITHIN GROUP (hypothetical-set aggregate {name})"
        )));
    }
    Err(PgError::new(
        codes::UNDEFINED_FUNCTION,
        format!("function {name} with WITHIN GROUP arguments does not exist"),
    ))
}

/// An aggregate call: the binder reads its arguments, DISTINCT/ALL, ORDER BY and FILTER;
/// `WITHIN GROUP` only of the ordered-set aggregates (`ordered_set_call`).
pub fn aggregate_call(f: &ast::Function) -> PgResult<()> {
    let ast::Function {
        name,
        uses_odbc_syntax,
        parameters,
        args,
        within_group,
        filter: _,
        null_treatment,
        over: _, // a call with OVER is a window call (binder/window.rs)
    } = f;
    refuse_if(*uses_odbc_syntax, "ODBC function call syntax")?;
    refuse_if(
        !matches!(parameters, ast::FunctionArguments::None),
        "parametric functions",
    )?;
    refuse_if(null_treatment.is_some(), "IGNORE/RESPECT NULLS")?;
    refuse_within_group(name, within_group)?;
    if let ast::FunctionArguments::List(ast::FunctionArgumentList {
        duplicate_treatment: _,
        args: _,
        clauses,
    }) = args
    {
        for clause in clauses {
            match clause {
                ast::FunctionArgumentClause::OrderBy(keys) => {
                    keys.iter().try_for_each(order_by_expr)?
                }
                _ => return Err(unsupported("clauses inside an aggregate's argument list")),
            }
        }
    }
    Ok(())
}

/// INSERT: the binder reads the table (and its alias), the column list, the source,
/// ON CONFLICT [target] DO NOTHING and RETURNING.
pub fn insert(ins: &ast::Insert) -> PgResult<()> {
    let ast::Insert {
        insert_token: _,
        optimizer_hints,
        or,
        ignore,
        into: _,
        table: _,
        table_alias: _,
        columns: _,
        overwrite,
        source: _,
        assignments,
        partitioned,
        after_columns,
        has_table_keyword,
        on: _,
        returning: _,
        output,
        replace_into,
        priority,
        insert_alias,
        settings,
        format_clause,
        multi_table_insert_type,
        multi_table_into_clauses,
        multi_table_when_clauses,
        multi_table_else_clause,
    } = ins;
    refuse_if(!optimizer_hints.is_empty(), "optimizer hints")?;
    refuse_if(or.is_some(), "INSERT OR …")?;
    refuse_if(*ignore, "INSERT IGNORE")?;
    refuse_if(*overwrite, "INSERT OVERWRITE")?;
    refuse_if(!assignments.is_empty(), "INSERT … SET")?;
    refuse_if(
        partitioned.is_some() || !after_columns.is_empty(),
        "INSERT … PARTITION",
    )?;
    refuse_if(*has_table_keyword, "INSERT INTO TABLE")?;
    refuse_if(output.is_some(), "OUTPUT")?;
    refuse_if(*replace_into, "REPLACE INTO")?;
    refuse_if(priority.is_some(), "INSERT priorities")?;
    refuse_if(insert_alias.is_some(), "INSERT … AS row alias")?;
    refuse_if(settings.is_some(), "SETTINGS")?;
    refuse_if(format_clause.is_some(), "FORMAT")?;
    refuse_if(
        multi_table_insert_type.is_some()
            || !multi_table_into_clauses.is_empty()
            || !multi_table_when_clauses.is_empty()
            || multi_table_else_clause.is_some(),
        "multi-table INSERT",
    )
}

/// UPDATE: the binder reads the table, SET, FROM, WHERE and RETURNING.
pub fn update(upd: &ast::Update) -> PgResult<()> {
    let ast::Update {
        update_token: _,
        optimizer_hints,
        table,
        assignments: _,
        from: _,
        selection: _,
        returning: _,
        output,
        or,
        order_by,
        limit,
    } = upd;
    refuse_if(!optimizer_hints.is_empty(), "optimizer hints")?;
    refuse_if(!table.joins.is_empty(), "joins in UPDATE's target")?;
    refuse_if(output.is_some(), "OUTPUT")?;
    refuse_if(or.is_some(), "UPDATE OR …")?;
    refuse_if(!order_by.is_empty(), "UPDATE … ORDER BY")?;
    refuse_if(limit.is_some(), "UPDATE … LIMIT")
}

/// DELETE: the binder reads the table, USING, WHERE and RETURNING.
pub fn delete(del: &ast::Delete) -> PgResult<()> {
    let ast::Delete {
        delete_token: _,
        optimizer_hints,
        tables,
        from,
        using: _,
        selection: _,
        returning: _,
        output,
        order_by,
        limit,
    } = del;
    refuse_if(!optimizer_hints.is_empty(), "optimizer hints")?;
    refuse_if(!tables.is_empty(), "multi-table DELETE")?;
    let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) = from;
    refuse_if(
        from.len() != 1 || !from[0].joins.is_empty(),
        "DELETE from several tables",
    )?;
    refuse_if(output.is_some(), "OUTPUT")?;
    refuse_if(!order_by.is_empty(), "DELETE … ORDER BY")?;
    refuse_if(limit.is_some(), "DELETE … LIMIT")
}

/// The target table of UPDATE/DELETE: a plain name with an optional alias.
pub fn dml_target(tf: &ast::TableFactor) -> PgResult<()> {
    match tf {
        ast::TableFactor::Table {
            args: None, alias, ..
        } => {
            table_factor(tf)?;
            refuse_if(
                alias.as_ref().is_some_and(|a| !a.columns.is_empty()),
                "column aliases for an UPDATE/DELETE target",
            )
        }
        _ => Err(unsupported("this UPDATE/DELETE target")),
    }
}

/// CREATE TABLE: the binder reads the name, IF NOT EXISTS, the columns, the constraints
/// and the storage parameters (`WITH (…)`); UNLOGGED tables are kept logged (only
/// durability differs).
pub fn create_table(ct: &ast::CreateTable) -> PgResult<()> {
    let ast::CreateTable {
        or_replace,
        temporary,
        unlogged: _,
        external,
        dynamic,
        global,
        if_not_exists: _,
        transient,
        volatile,
        iceberg,
        snapshot,
        name: _,
        columns: _,
        constraints: _,
        hive_distribution,
        hive_formats,
        table_options,
        file_format,
        location,
        query: _, // CREATE TABLE AS: read by binder/create_table_as.rs
        without_rowid,
        like,
        clone,
        version,
        comment,
        on_commit,
        on_cluster,
        primary_key,
        order_by,
        partition_by,
        cluster_by,
        clustered_by,
        inherits,
        partition_of,
        for_values,
        strict,
        copy_grants,
        enable_schema_evolution,
        change_tracking,
        data_retention_time_in_days,
        max_data_extension_time_in_days,
        default_ddl_collation,
        with_aggregation_policy,
        with_row_access_policy,
        with_storage_lifecycle_policy,
        with_tags,
        external_volume,
        with_connection,
        base_location,
        catalog,
        catalog_sync,
        storage_serialization_policy,
        target_lag,
        warehouse,
        refresh_mode,
        initialize,
        require_user,
        diststyle,
        distkey,
        sortkey,
        backup,
        multiset,
        fallback,
        with_data: _, // likewise
    } = ct;
    refuse_if(
        partition_by.is_some() || partition_of.is_some() || for_values.is_some(),
        "partitioned tables (PARTITION BY)",
    )?;
    refuse_if(
        *temporary || global.is_some() || on_commit.is_some(),
        "temporary tables",
    )?;
    refuse_if(like.is_some(), "CREATE TABLE … LIKE")?;
    refuse_if(inherits.is_some(), "table inheritance (INHERITS)")?;
    refuse_if(*or_replace, "CREATE OR REPLACE TABLE")?;
    refuse_if(comment.is_some(), "table comments")?;
    refuse_if(
        !matches!(
            table_options,
            ast::CreateTableOptions::None | ast::CreateTableOptions::With(_)
        ),
        "these table options",
    )?;
    let other_dialects = *external
        || *dynamic
        || *transient
        || *volatile
        || *iceberg
        || *snapshot
        || !matches!(hive_distribution, ast::HiveDistributionStyle::NONE)
        || hive_formats
            .as_ref()
            .is_some_and(|f| *f != ast::HiveFormat::default())
        || file_format.is_some()
        || location.is_some()
        || *without_rowid
        || clone.is_some()
        || version.is_some()
        || on_cluster.is_some()
        || primary_key.is_some()
        || order_by.is_some()
        || cluster_by.is_some()
        || clustered_by.is_some()
        || *strict
        || *copy_grants
        || enable_schema_evolution.is_some()
        || change_tracking.is_some()
        || data_retention_time_in_days.is_some()
        || max_data_extension_time_in_days.is_some()
        || default_ddl_collation.is_some()
        || with_aggregation_policy.is_some()
        || with_row_access_policy.is_some()
        || with_storage_lifecycle_policy.is_some()
        || with_tags.is_some()
        || external_volume.is_some()
        || with_connection.is_some()
        || base_location.is_some()
        || catalog.is_some()
        || catalog_sync.is_some()
        || storage_serialization_policy.is_some()
        || target_lag.is_some()
        || warehouse.is_some()
        || refresh_mode.is_some()
        || initialize.is_some()
        || *require_user
        || diststyle.is_some()
        || distkey.is_some()
        || sortkey.is_some()
        || backup.is_some()
        || multiset.is_some()
        || fallback.is_some();
    refuse_if(other_dialects, "this CREATE TABLE option")
}

/// A column definition: the binder reads the name, the type (serial types included) and
/// the options NULL, NOT NULL, DEFAULT, PRIMARY KEY, UNIQUE, CHECK and GENERATED … AS
/// IDENTITY.
pub fn column_def(c: &ast::ColumnDef) -> PgResult<()> {
    let ast::ColumnDef {
        name: _,
        data_type: _,
        options,
    } = c;
    for ast::ColumnOptionDef { name: _, option } in options {
        match option {
            ast::ColumnOption::Null
            | ast::ColumnOption::NotNull
            | ast::ColumnOption::Default(_) => {}
            ast::ColumnOption::PrimaryKey(pk) => primary_key(pk)?,
            ast::ColumnOption::Unique(u) => unique_constraint(u)?,
            ast::ColumnOption::ForeignKey(fk) => foreign_key(fk)?,
            ast::ColumnOption::Check(c) => check_constraint(c)?,
            ast::ColumnOption::Collation(_) => return Err(unsupported("column collations")),
            // Identity columns; generated (computed) columns are not supported.
            ast::ColumnOption::Generated {
                generation_expr: None,
                ..
            } => {}
            ast::ColumnOption::Generated { .. } => return Err(unsupported("generated columns")),
            other => return Err(unsupported(format!("column option {other}"))),
        }
    }
    Ok(())
}

/// CHECK (expr): the binder reads the name and the expression.
pub fn check_constraint(c: &ast::CheckConstraint) -> PgResult<()> {
    let ast::CheckConstraint {
        name: _,
        expr: _,
        no_inherit,
        enforced,
    } = c;
    refuse_if(*no_inherit, "CHECK … NO INHERIT")?;
    refuse_if(enforced.is_some(), "CHECK … [NOT] ENFORCED")
}

/// FOREIGN KEY / REFERENCES: the binder reads the name, the columns, the referenced
/// table and columns and the actions; MATCH SIMPLE (the default) only, and never
/// deferred (checks at commit are not implemented: refused, not ignored).
pub fn foreign_key(fk: &ast::ForeignKeyConstraint) -> PgResult<()> {
    let ast::ForeignKeyConstraint {
        name: _,
        index_name,
        columns: _,
        foreign_table: _,
        referred_columns: _,
        on_delete: _,
        on_update: _,
        match_kind,
        characteristics,
    } = fk;
    refuse_if(index_name.is_some(), "an index name in FOREIGN KEY")?;
    refuse_if(
        matches!(
            match_kind,
            Some(
                ast::ConstraintReferenceMatchKind::Full
                    | ast::ConstraintReferenceMatchKind::Partial
            )
        ),
        "MATCH FULL and MATCH PARTIAL foreign keys",
    )?;
    if let Some(ast::ConstraintCharacteristics {
        deferrable,
        initially,
        enforced,
    }) = characteristics
    {
        refuse_if(
            *deferrable == Some(true) || *initially == Some(ast::DeferrableInitial::Deferred),
            "DEFERRABLE constraints",
        )?;
        refuse_if(enforced.is_some(), "FOREIGN KEY … [NOT] ENFORCED")?;
    }
    Ok(())
}

/// UNIQUE [(columns)]: the binder reads the constraint name and the column names.
pub fn unique_constraint(u: &ast::UniqueConstraint) -> PgResult<()> {
    let ast::UniqueConstraint {
        name: _,
        index_name,
        index_type_display: _,
        index_type,
        columns,
        include,
        index_options,
        characteristics,
        nulls_distinct,
    } = u;
    refuse_if(
        index_name.is_some() || index_type.is_some() || !index_options.is_empty(),
        "index options of a UNIQUE constraint",
    )?;
    refuse_if(!include.is_empty(), "UNIQUE … INCLUDE")?;
    refuse_if(characteristics.is_some(), "DEFERRABLE constraints")?;
    refuse_if(
        matches!(nulls_distinct, ast::NullsDistinctOption::NotDistinct),
        "NULLS NOT DISTINCT",
    )?;
    for c in columns {
        index_column(c)?;
        refuse_if(
            c.column.options.sort.is_some() || c.column.options.nulls_first.is_some(),
            "orderings in a UNIQUE constraint",
        )?;
    }
    Ok(())
}

/// CREATE INDEX: the binder reads the name, the table, UNIQUE, CONCURRENTLY (every
/// build here is one), IF NOT EXISTS and the columns with their orderings.
pub fn create_index(ci: &ast::CreateIndex) -> PgResult<()> {
    let ast::CreateIndex {
        name: _,
        table_name: _,
        using,
        columns,
        unique: _,
        concurrently: _,
        r#async,
        if_not_exists: _,
        include,
        nulls_distinct,
        with,
        predicate,
        index_options,
        alter_options,
    } = ci;
    refuse_if(
        using
            .as_ref()
            .is_some_and(|u| !u.to_string().eq_ignore_ascii_case("btree")),
        "index access methods other than btree",
    )?;
    refuse_if(*r#async, "CREATE INDEX ASYNC")?;
    refuse_if(!include.is_empty(), "INCLUDE columns of an index")?;
    refuse_if(nulls_distinct == &Some(false), "NULLS NOT DISTINCT")?;
    refuse_if(!with.is_empty(), "index storage parameters")?;
    refuse_if(
        predicate.is_some(),
        "partial indexes (CREATE INDEX … WHERE)",
    )?;
    refuse_if(
        !index_options.is_empty() || !alter_options.is_empty(),
        "index options",
    )?;
    for c in columns {
        index_column(c)?;
        refuse_if(
            matches!(c.column.options.sort, Some(ast::OrderBySort::Using(_))),
            "USING operators in an index",
        )?;
    }
    Ok(())
}

/// One column of an index: a plain column name (expressions are refused).
fn index_column(c: &ast::IndexColumn) -> PgResult<()> {
    let ast::IndexColumn {
        column:
            ast::OrderByExpr {
                expr,
                options: _,
                with_fill,
            },
        operator_class,
    } = c;
    refuse_if(
        !matches!(expr, ast::Expr::Identifier(_)),
        "expression indexes",
    )?;
    refuse_if(with_fill.is_some(), "WITH FILL")?;
    refuse_if(operator_class.is_some(), "operator classes")
}

/// PRIMARY KEY (columns): the binder reads the constraint name and the column names.
pub fn primary_key(pk: &ast::PrimaryKeyConstraint) -> PgResult<()> {
    let ast::PrimaryKeyConstraint {
        name: _,
        index_name,
        index_type,
        columns,
        include,
        index_options,
        characteristics,
    } = pk;
    refuse_if(
        index_name.is_some() || index_type.is_some() || !index_options.is_empty(),
        "index options of a primary key",
    )?;
    refuse_if(!include.is_empty(), "PRIMARY KEY … INCLUDE")?;
    refuse_if(characteristics.is_some(), "DEFERRABLE constraints")?;
    for c in columns {
        let ast::IndexColumn {
            column:
                ast::OrderByExpr {
                    expr,
                    options,
                    with_fill,
                },
            operator_class,
        } = c;
        let plain_name = matches!(expr, ast::Expr::Identifier(_));
        refuse_if(
            !plain_name
                || options.sort.is_some()
                || options.nulls_first.is_some()
                || with_fill.is_some(),
            "expressions and orderings in a primary key",
        )?;
        refuse_if(operator_class.is_some(), "operator classes")?;
    }
    Ok(())
}

/// An ordered-set aggregate call (`percentile_cont(0.5) WITHIN GROUP (ORDER BY x)`): the
/// binder reads its direct arguments, its WITHIN GROUP keys, FILTER and OVER (refused
/// there, as PostgreSQL refuses it). DISTINCT and an ORDER BY among the arguments are
/// PostgreSQL's syntax errors.
pub fn ordered_set_call(f: &ast::Function) -> PgResult<()> {
    let ast::Function {
        name: _,
        uses_odbc_syntax,
        parameters,
        args,
        within_group,
        filter: _,
        null_treatment,
        over: _,
    } = f;
    refuse_if(*uses_odbc_syntax, "ODBC function call syntax")?;
    refuse_if(
        !matches!(parameters, ast::FunctionArguments::None),
        "parametric functions",
    )?;
    refuse_if(null_treatment.is_some(), "IGNORE/RESPECT NULLS")?;
    within_group.iter().try_for_each(order_by_expr)?;
    if let ast::FunctionArguments::List(ast::FunctionArgumentList {
        duplicate_treatment,
        args: _,
        clauses,
    }) = args
    {
        if matches!(duplicate_treatment, Some(ast::DuplicateTreatment::Distinct)) {
            return Err(PgError::new(
                codes::SYNTAX_ERROR,
                "cannot use DISTINCT with WITHIN GROUP",
            ));
        }
        match clauses.first() {
            None => {}
            Some(ast::FunctionArgumentClause::OrderBy(_)) => {
                return Err(PgError::new(
                    codes::SYNTAX_ERROR,
                    "cannot use multiple ORDER BY clauses with WITHIN GROUP",
                ))
            }
            Some(_) => return Err(unsupported("clauses inside an aggregate's argument list")),
        }
    }
    Ok(())
}
