//! The simple-query plan cache: statements that differ only in their literals
//! (`sql::normalize`) share one bound plan, the literals run as its parameters. The
//! plans are shared by the sessions of one session thread.

use super::{Session, PLAN_CACHE_SIZE};
use crate::plan_cache::PlanCache;
use crate::session_io::SessionStream;
use pgerror::PgResult;
use sql::binder::bind;
use sql::normalize::{normalize, parse_normalized, Normalized};
use sql::parse::{parse_statement, ParsedStatement};
use sql::plan::{BoundStatement, Statement};
use sql::statement_shape::{statement_shape, StatementShape};
use std::cell::RefCell;
use std::sync::Arc;
use types::{DataType, Value};

/// A cached plan for auto-parameterized simple-query statements (see `sql::normalize`),
/// keyed by `simple_cache_key`.
pub(super) enum SimplePlan {
    /// The normalized text, bound with the literals' types as declared parameter types.
    Bound {
        /// Kept to bind again after DDL.
        parsed: Box<ParsedStatement>,
        bound: Arc<BoundStatement>,
        param_types: Vec<DataType>,
        catalog_version: u64,
        /// pg_stat_statements' view of the statements sharing the plan.
        shape: Option<Arc<StatementShape>>,
    },
    /// Not cacheable: statements with this key take the ordinary path. With a catalog
    /// version, the key failed to bind then and is retried after DDL; without one it can
    /// never be cached (it does not parse, or binds to something other than DML/queries).
    Uncacheable { catalog_version: Option<u64> },
}

thread_local! {
    /// Auto-parameterized simple-query plans by `simple_cache_key`, shared likewise.
    static SIMPLE_PLANS: RefCell<PlanCache<SimplePlan>> = RefCell::new(PlanCache::new(PLAN_CACHE_SIZE));
}

/// The cache key: the normalized text plus the literals' kinds (`aid = 5` and
/// `aid = 5000000000` share the text but bind their parameter as int4 vs int8).
fn simple_cache_key(norm: &Normalized) -> String {
    let mut key = String::with_capacity(norm.key.len() + 1 + norm.literals.len());
    key.push_str(&norm.key);
    key.push('\0');
    key.extend(norm.literals.iter().map(|(_, kind)| kind.code()));
    key
}

fn cache_simple_plan(key: String, plan: SimplePlan) -> Arc<SimplePlan> {
    SIMPLE_PLANS.with(|c| c.borrow_mut().insert(key, plan))
}

/// One statement of a simple query, parsed (or found in the plan cache) before any runs.
pub(super) enum SimpleStep<'a> {
    /// The ordinary path: the statement's own text, parsed; bound when it runs.
    Plain(ParsedStatement),
    /// Auto-parameterized: the cache entry, or the parsed normalized text on a miss.
    Auto {
        text: &'a str,
        norm: Normalized,
        cache_key: String,
        found: AutoPlan,
    },
}

pub(super) enum AutoPlan {
    Cached(Arc<SimplePlan>),
    Parsed(Box<ParsedStatement>),
}

impl<S: SessionStream> Session<S> {
    /// Parse one statement of a simple query, or find its auto-parameterized plan.
    pub(super) fn simple_step<'a>(&mut self, text: &'a str) -> PgResult<SimpleStep<'a>> {
        let Some(norm) = normalize(text) else {
            return Ok(SimpleStep::Plain(parse_statement(text)?));
        };
        let cache_key = simple_cache_key(&norm);
        let found = match SIMPLE_PLANS.with(|c| c.borrow().get(&cache_key)) {
            Some(p) => match *p {
                SimplePlan::Bound { .. } => AutoPlan::Cached(p),
                SimplePlan::Uncacheable {
                    catalog_version: None,
                } => return Ok(SimpleStep::Plain(parse_statement(text)?)),
                SimplePlan::Uncacheable {
                    catalog_version: Some(v),
                } if v == self.shared.catalog.version() => {
                    return Ok(SimpleStep::Plain(parse_statement(text)?))
                }
                // It failed to bind before DDL since: try again.
                SimplePlan::Uncacheable { .. } => match parse_normalized(text, &norm) {
                    Some(parsed) => AutoPlan::Parsed(Box::new(parsed)),
                    None => return Ok(SimpleStep::Plain(parse_statement(text)?)),
                },
            },
            None => match parse_normalized(text, &norm) {
                Some(parsed) => AutoPlan::Parsed(Box::new(parsed)),
                None => {
                    cache_simple_plan(
                        cache_key,
                        SimplePlan::Uncacheable {
                            catalog_version: None,
                        },
                    );
                    return Ok(SimpleStep::Plain(parse_statement(text)?));
                }
            },
        };
        Ok(SimpleStep::Auto {
            text,
            norm,
            cache_key,
            found,
        })
    }

    /// Run an auto-parameterized statement with its literals as parameters, binding and
    /// caching its normalized text first if needed. Whenever the normalized text does not
    /// bind (to a query or DML, with the literals' own types), the statement takes the
    /// ordinary path, so that errors are reported exactly as they are without the cache.
    /// Returns the statement's shape (`sql::statement_shape`) and the rows it returned or
    /// affected.
    pub(super) async fn run_simple_auto(
        &mut self,
        text: &str,
        norm: Normalized,
        cache_key: String,
        found: AutoPlan,
    ) -> PgResult<(Option<Arc<StatementShape>>, u64)> {
        let ordinary_shape = || statement_shape(text).map(Arc::new);
        let version = self.shared.catalog.version();
        let plan = match found {
            AutoPlan::Cached(p) if matches!(*p, SimplePlan::Bound { catalog_version, .. } if catalog_version == version) => {
                Some(p)
            }
            AutoPlan::Cached(p) => match &*p {
                // DDL since it was bound: bind again.
                SimplePlan::Bound { parsed, .. } => {
                    self.bind_simple_plan(cache_key, parsed.clone(), text, &norm, version)
                }
                SimplePlan::Uncacheable { .. } => None,
            },
            AutoPlan::Parsed(parsed) => {
                self.bind_simple_plan(cache_key, parsed, text, &norm, version)
            }
        };
        let Some(plan) = plan else {
            // The original text is parsed only now, after the statements before it ran.
            // It tokenizes like the normalized text that parsed (parse_normalized checks
            // that), so a syntax error here, which would have stopped the whole query
            // string before anything ran, is not a practical concern.
            let rows = self.run_simple_parsed(&parse_statement(text)?).await?;
            return Ok((ordinary_shape(), rows));
        };
        let SimplePlan::Bound {
            bound,
            param_types,
            shape,
            ..
        } = &*plan
        else {
            unreachable!("only bound plans are returned")
        };
        let zone = self.state.settings.lock().zone().clone();
        let params = norm
            .literals
            .iter()
            .zip(param_types)
            .map(|((literal, _), ty)| types::io::from_text_in(literal, ty, &zone))
            .collect::<PgResult<Vec<Value>>>()?;
        let produced = self.out.len();
        match self.run_simple(bound, &params).await {
            // Bound before another coordinator's DDL: the ordinary path binds it again.
            Err(e) if super::transaction::is_catalog_moved(&e) => {
                self.out.truncate(produced);
                let rows = self.run_simple_parsed(&parse_statement(text)?).await?;
                Ok((ordinary_shape(), rows))
            }
            done => done.map(|rows| (shape.clone(), rows)),
        }
    }

    /// Bind a normalized statement and cache the result (a plan, or "uncacheable").
    fn bind_simple_plan(
        &mut self,
        cache_key: String,
        parsed: Box<ParsedStatement>,
        text: &str,
        norm: &Normalized,
        version: u64,
    ) -> Option<Arc<SimplePlan>> {
        let declared: Vec<u32> = norm
            .literals
            .iter()
            .map(|(_, kind)| kind.type_oid())
            .collect();
        let entry = match bind(&parsed, &self.shared.catalog, &declared) {
            Ok((bound, types)) => {
                let usable = matches!(
                    bound.statement,
                    Statement::Query(_)
                        | Statement::Insert(_)
                        | Statement::Update(_)
                        | Statement::Delete(_)
                ) && types.len() == norm.literals.len()
                    && types
                        .iter()
                        .zip(&norm.literals)
                        .all(|(ty, (_, kind))| *ty == kind.data_type());
                if usable {
                    SimplePlan::Bound {
                        parsed,
                        bound: Arc::new(bound),
                        param_types: types,
                        catalog_version: version,
                        // Every text with this plan's key has this shape: they differ
                        // only in numbers, which the shape takes out too.
                        shape: statement_shape(text).map(Arc::new),
                    }
                } else {
                    SimplePlan::Uncacheable {
                        catalog_version: None,
                    }
                }
            }
            // Possibly a missing table or column that DDL may yet create.
            Err(_) => SimplePlan::Uncacheable {
                catalog_version: Some(version),
            },
        };
        let plan = cache_simple_plan(cache_key, entry);
        matches!(*plan, SimplePlan::Bound { .. }).then_some(plan)
    }
}
