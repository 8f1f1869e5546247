//! Bound formulas compiled into flat node arrays for evaluation.
//!
//! The expression tree ([`crate::formula::Expr`]) is made of boxes scattered
//! over the heap, and Intel's formulas are long: walking the trees of a whole
//! library every interval is dominated by cache misses. A [`Compiled`]
//! formula holds the same tree as small `Copy` nodes in one array, in
//! evaluation order, children referring to their index. Names, constants and
//! the text of divisors stay in the tree: a node keeps the pre-order index
//! of its expression ([`nth`]) for messages.

use crate::formula::{BinOp, Constant, Expr, ExprKind, Func, Special, Target};

/// One node. Child fields are indexes into [`Compiled::nodes`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Node {
    Num(f64),
    Event(u32),
    Metric(u32),
    Special(Special),
    /// Index into the library's constant table.
    Const(u32),
    /// A name bound to nothing countable (unknown metric, or a pattern).
    Name {
        pre: u32,
        unknown_metric: bool,
    },
    Neg(u32),
    Not(u32),
    Bin {
        op: BinOp,
        l: u32,
        r: u32,
        /// Pre-order index of the right operand (the divisor's text).
        pre_r: u32,
    },
    Cond {
        c: u32,
        t: u32,
        e: u32,
    },
    /// Arguments are `args[start..start + len]`.
    Call {
        f: Func,
        start: u32,
        len: u32,
    },
    Index {
        child: u32,
        n: u32,
    },
}

/// A formula as a flat array; the root is node 0.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Compiled {
    pub nodes: Vec<Node>,
    pub args: Vec<u32>,
}

/// Compile a bound expression; `consts` is the library's constant table.
pub(crate) fn compile(root: &Expr, consts: &mut Vec<Constant>) -> Compiled {
    let mut c = Compiled::default();
    let mut pre = 0u32;
    emit(root, &mut c, consts, &mut pre);
    c
}

fn emit(e: &Expr, c: &mut Compiled, consts: &mut Vec<Constant>, pre: &mut u32) -> u32 {
    let me = c.nodes.len() as u32;
    let my_pre = *pre;
    *pre += 1;
    c.nodes.push(Node::Num(0.0));
    let node = match &e.kind {
        ExprKind::Number(n) => Node::Num(*n),
        ExprKind::Constant(k) => {
            let i = match consts.iter().position(|x| x == k) {
                Some(i) => i,
                None => {
                    consts.push(k.clone());
                    consts.len() - 1
                }
            };
            Node::Const(i as u32)
        }
        ExprKind::Ref(r) => match r.target {
            Target::Event(i) => Node::Event(i),
            Target::Metric(m) => Node::Metric(m),
            Target::Special(s) => Node::Special(s),
            Target::UnknownMetric => Node::Name {
                pre: my_pre,
                unknown_metric: true,
            },
            Target::Unbound => Node::Name {
                pre: my_pre,
                unknown_metric: false,
            },
        },
        ExprKind::Neg(x) => Node::Neg(emit(x, c, consts, pre)),
        ExprKind::Not(x) => Node::Not(emit(x, c, consts, pre)),
        ExprKind::Index(x, n) => Node::Index {
            child: emit(x, c, consts, pre),
            n: *n,
        },
        ExprKind::Binary(op, a, b) => {
            let l = emit(a, c, consts, pre);
            let pre_r = *pre;
            let r = emit(b, c, consts, pre);
            Node::Bin {
                op: *op,
                l,
                r,
                pre_r,
            }
        }
        ExprKind::Cond {
            cond,
            then,
            otherwise,
        } => {
            // The same order as `Expr::walk`: then, cond, otherwise.
            let t = emit(then, c, consts, pre);
            let cc = emit(cond, c, consts, pre);
            let el = emit(otherwise, c, consts, pre);
            Node::Cond { c: cc, t, e: el }
        }
        ExprKind::Call(f, args) => {
            let ids: Vec<u32> = args.iter().map(|a| emit(a, c, consts, pre)).collect();
            let start = c.args.len() as u32;
            c.args.extend(&ids);
            Node::Call {
                f: *f,
                start,
                len: ids.len() as u32,
            }
        }
    };
    c.nodes[me as usize] = node;
    me
}

/// The expression with pre-order index `n` (the order of `Expr::walk`).
pub(crate) fn nth(root: &Expr, n: u32) -> Option<&Expr> {
    let mut i = 0u32;
    let mut found = None;
    root.walk(&mut |e| {
        if i == n {
            found = Some(e);
        }
        i += 1;
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formula::{Dialect, Formula};

    #[test]
    fn pre_order_matches_walk() {
        let f = Formula::parse(
            "a / (b - c) + (x if y > 1 else min(z, 2)) * -w[0]",
            Dialect::Pmx,
        )
        .unwrap();
        let mut consts = Vec::new();
        let c = compile(f.root(), &mut consts);
        let mut count = 0;
        f.root().walk(&mut |_| count += 1);
        assert_eq!(c.nodes.len(), count);
        for node in &c.nodes {
            if let Node::Bin {
                op: BinOp::Div,
                pre_r,
                ..
            } = node
            {
                assert_eq!(nth(f.root(), *pre_r).unwrap().to_string(), "b - c");
            }
            if let Node::Name { pre, .. } = node {
                assert!(matches!(
                    nth(f.root(), *pre).unwrap().kind,
                    ExprKind::Ref(_)
                ));
            }
        }
    }
}
