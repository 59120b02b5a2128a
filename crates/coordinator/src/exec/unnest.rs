//! `Rel::Unnest`: an array evaluated once, its elements handed up in order (evaluating
//! the array per element, as a series of subscripts, was quadratic in its length); and
//! `Rel::RowsFrom`: set-returning functions' rows side by side.

use super::nodes::{open, BoxNode, Node};
use super::{Executor, Outer, Row, BATCH};
use futures::future::BoxFuture;
use pgerror::PgResult;
use sql::plan::{Expr, Rel};
use std::collections::VecDeque;
use types::Value;

pub(super) struct UnnestNode<'e> {
    ex: &'e Executor<'e>,
    array: &'e Expr,
    outer: Outer,
    /// The elements not handed out yet; None until the array is evaluated.
    elements: Option<std::vec::IntoIter<Value>>,
}

impl<'e> UnnestNode<'e> {
    pub(super) fn new(ex: &'e Executor<'e>, array: &'e Expr, outer: Outer) -> Self {
        UnnestNode {
            ex,
            array,
            outer,
            elements: None,
        }
    }
}

/// The elements of `array` in order: a multidimensional array's flattened, unless
/// `whole` (a list of arrays, each one element).
fn elements(array: Value, whole: bool, into: &mut Vec<Value>) {
    match array {
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Array(_) if !whole => elements(item, false, into),
                    other => into.push(other),
                }
            }
        }
        Value::Null => {}
        other => into.push(other),
    }
}

impl Node for UnnestNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            if self.elements.is_none() {
                let array = self.ex.eval(&self.outer, self.array, &[]).await?;
                let mut items = Vec::new();
                elements(array, sql::plan::unnests_arrays(self.array), &mut items);
                self.elements = Some(items.into_iter());
            }
            let Some(items) = self.elements.as_mut() else {
                return Ok(None);
            };
            let batch: Vec<Row> = items.by_ref().take(BATCH).map(|v| vec![v]).collect();
            self.ex.pace(batch.len()).await;
            Ok((!batch.is_empty()).then_some(batch))
        })
    }
}

pub(super) struct RowsFromNode<'e> {
    /// Each function's operator (None once done), its width and the rows it handed up
    /// that are not out yet.
    functions: Vec<(Option<BoxNode<'e>>, usize, VecDeque<Row>)>,
    ordinality: bool,
    position: i64,
}

impl<'e> RowsFromNode<'e> {
    pub(super) fn new(
        ex: &'e Executor<'e>,
        functions: &'e [Rel],
        ordinality: bool,
        outer: Outer,
    ) -> Self {
        RowsFromNode {
            functions: (functions.iter())
                .map(|f| (Some(open(ex, f, outer.clone())), f.width(), VecDeque::new()))
                .collect(),
            ordinality,
            position: 0,
        }
    }
}

impl Node for RowsFromNode<'_> {
    fn next(&mut self) -> BoxFuture<'_, PgResult<Option<Vec<Row>>>> {
        Box::pin(async move {
            // refill each function's buffer that ran dry, so each row takes one from each
            for (node, _, rows) in &mut self.functions {
                if let (Some(n), true) = (node.as_mut(), rows.is_empty()) {
                    match n.next().await? {
                        Some(batch) => rows.extend(batch),
                        None => *node = None,
                    }
                }
            }
            // the rows every running function can give now (a function is done only once
            // its buffer is empty); none once the longest is done
            let count = (self.functions.iter())
                .filter_map(|(node, _, rows)| node.is_some().then_some(rows.len()))
                .min();
            let Some(count) = count else {
                return Ok(None);
            };
            let mut batch = Vec::with_capacity(count);
            for _ in 0..count {
                let mut row = Row::new();
                for (_, width, rows) in &mut self.functions {
                    match rows.pop_front() {
                        Some(r) => row.extend(r),
                        None => row.extend(std::iter::repeat_n(Value::Null, *width)),
                    }
                }
                self.position += 1;
                if self.ordinality {
                    row.push(Value::Int8(self.position));
                }
                batch.push(row);
            }
            Ok(Some(batch))
        })
    }
}
