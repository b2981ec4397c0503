//! Items and statements: `use`, `let`, topologies, constraints, problems
//! and tests.

use super::{doc_comment, string_text, unescape, Builder, Rule, P, R};
use crate::ast::*;
use mcm_core::source::Span;

impl Builder<'_> {
    pub(super) fn item(&self, p: P) -> R<Item> {
        Ok(match p.as_rule() {
            Rule::use_decl => Item::Use(self.use_decl(p)),
            Rule::let_decl => Item::Let(self.let_decl(p)?),
            Rule::topology_decl => Item::Topology(self.topology(p)?),
            Rule::constraint_decl => Item::Constraint(self.constraint(p)?),
            Rule::partition_decl => Item::Partition(self.partition(p)?),
            Rule::test_decl => Item::Test(self.test(p)?),
            r => unreachable!("grammar yields no item {r:?}"),
        })
    }

    fn use_decl(&self, p: P) -> UseDecl {
        let span = self.span(&p);
        let inner = p.into_inner().next().expect("use has a target");
        let target = match inner.as_rule() {
            Rule::string => UseTarget::File {
                span: self.span(&inner),
                path: unescape(string_text(&inner)),
            },
            _ => {
                let mut segments = Vec::new();
                let mut items = UseItems::Bare;
                for q in inner.into_inner() {
                    match q.as_rule() {
                        Rule::ident => segments.push(self.ident(q)),
                        Rule::use_all => items = UseItems::All,
                        Rule::use_group => items = UseItems::Some(q.into_inner().map(|i| self.ident(i)).collect()),
                        _ => {}
                    }
                }
                UseTarget::Path { segments, items }
            }
        };
        UseDecl { target, span }
    }

    fn let_decl(&self, p: P) -> R<LetDecl> {
        let span = self.span(&p);
        let mut it = p.into_inner().peekable();
        let name = self.ident(it.next().expect("let name"));
        let ty = match it.peek().map(|q| q.as_rule()) {
            Some(Rule::type_ann) => it.next().and_then(|q| q.into_inner().next()).map(|q| self.ident(q)),
            _ => None,
        };
        let value = self.expr(it.next().expect("let value"))?;
        Ok(LetDecl { name, ty, value, span })
    }

    fn params(&self, p: P) -> R<Vec<Param>> {
        p.into_inner()
            .map(|q| {
                let mut it = q.into_inner();
                let name = self.ident(it.next().expect("param name"));
                let ty = self.ident(it.next().expect("param type"));
                let default = it.next().map(|e| self.expr(e)).transpose()?;
                Ok(Param { name, ty, default })
            })
            .collect()
    }

    fn topology(&self, p: P) -> R<TopologyDecl> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("topology name"));
        let mut params = Vec::new();
        let mut body = Vec::new();
        for q in it {
            match q.as_rule() {
                Rule::params => params = self.params(q)?,
                Rule::topo_block => body = self.topo_block(q)?,
                _ => {}
            }
        }
        Ok(TopologyDecl {
            name,
            params,
            body,
            doc: doc_comment(self.text, span.start as usize),
            span,
        })
    }

    fn topo_block(&self, p: P) -> R<Vec<TopoStmt>> {
        p.into_inner().map(|q| self.topo_stmt(q)).collect()
    }

    fn topo_stmt(&self, p: P) -> R<TopoStmt> {
        let span = self.span(&p);
        Ok(match p.as_rule() {
            Rule::chips_stmt => {
                let mut it = p.into_inner();
                let name = self.ident(it.next().expect("chips name"));
                let mut count = None;
                let mut attrs = Vec::new();
                for q in it {
                    match q.as_rule() {
                        Rule::attrs => attrs = self.attrs(q)?,
                        _ => count = Some(self.expr(q)?),
                    }
                }
                TopoStmt::Chips {
                    name,
                    count,
                    attrs,
                    span,
                }
            }
            Rule::include_stmt => {
                let call = self.primary(p.into_inner().next().expect("included call"))?;
                TopoStmt::Include { call, span }
            }
            Rule::set_stmt => {
                let mut it = p.into_inner();
                let chip = self.chip_ref(it.next().expect("set target"))?;
                let attrs = self.attrs(it.next().expect("set attributes"))?;
                TopoStmt::Set { chip, attrs, span }
            }
            Rule::link_stmt => {
                let mut it = p.into_inner();
                let src = self.chip_ref(it.next().expect("link source"))?;
                let both_ways = it.next().expect("link direction").as_str() == "<->";
                let dst = self.chip_ref(it.next().expect("link target"))?;
                let attrs = it.next().map(|q| self.attrs(q)).transpose()?.unwrap_or_default();
                TopoStmt::Link {
                    src,
                    dst,
                    both_ways,
                    attrs,
                    span,
                }
            }
            Rule::for_stmt => {
                let mut it = p.into_inner();
                let var = self.ident(it.next().expect("for variable"));
                let _in = it.next();
                let range = it.next().expect("for range");
                let (from, to) = self.range(range)?;
                let body = self.topo_block(it.next().expect("for body"))?;
                TopoStmt::For { var, from, to, body }
            }
            Rule::if_stmt => {
                let mut it = p.into_inner();
                let cond = self.expr(it.next().expect("if condition"))?;
                let then = self.topo_block(it.next().expect("if body"))?;
                // `else if ...` is an `else` block holding one `if`.
                let otherwise = match it.next() {
                    Some(q) if q.as_rule() == Rule::if_stmt => vec![self.topo_stmt(q)?],
                    Some(q) => self.topo_block(q)?,
                    None => Vec::new(),
                };
                TopoStmt::If { cond, then, otherwise }
            }
            Rule::let_decl => TopoStmt::Let(self.let_decl(p)?),
            r => unreachable!("grammar yields no topology statement {r:?}"),
        })
    }

    pub(super) fn range(&self, p: P) -> R<(Expr, Expr)> {
        let mut it = p.into_inner();
        let a = self.expr(it.next().expect("range start"))?;
        let b = self.expr(it.next().expect("range end"))?;
        Ok((a, b))
    }

    fn chip_ref(&self, p: P) -> R<ChipRef> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let group = self.ident(it.next().expect("chip group"));
        let index = it.next().map(|q| self.expr(q)).transpose()?;
        Ok(ChipRef { group, index, span })
    }

    pub(super) fn attrs(&self, p: P) -> R<Vec<Attr>> {
        p.into_inner()
            .map(|q| {
                let mut it = q.into_inner();
                let name = self.ident(it.next().expect("attribute name"));
                let value = self.expr(it.next().expect("attribute value"))?;
                Ok(Attr { name, value })
            })
            .collect()
    }

    fn constraint(&self, p: P) -> R<ConstraintDecl> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("constraint name"));
        let mut params = Vec::new();
        let mut annotations = Vec::new();
        let mut body = Vec::new();
        for q in it {
            match q.as_rule() {
                Rule::params => params = self.params(q)?,
                Rule::annotation => annotations.push(self.ident(q.into_inner().next().expect("annotation name"))),
                _ => body.push(self.expr(q)?),
            }
        }
        Ok(ConstraintDecl {
            name,
            params,
            annotations,
            body,
            doc: doc_comment(self.text, span.start as usize),
            span,
        })
    }

    fn partition(&self, p: P) -> R<PartitionDecl> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let graph = self.expr(it.next().expect("partition graph"))?;
        let package = self.expr(it.next().expect("partition package"))?;
        let mut d = PartitionDecl {
            graph,
            package,
            alias: None,
            requires: Vec::new(),
            objective: None,
            evaluator: None,
            span,
        };
        for q in it {
            match q.as_rule() {
                Rule::ident => d.alias = Some(self.ident(q)),
                Rule::problem_block => {
                    for s in q.into_inner() {
                        let sspan = self.span(&s);
                        match s.as_rule() {
                            Rule::require_stmt => d.requires.extend(self.require(s)?),
                            Rule::objective_stmt => {
                                let mut it = s.into_inner();
                                let sense = match it.next().expect("sense").as_str() {
                                    "maximize" => Sense::Maximize,
                                    _ => Sense::Minimize,
                                };
                                let metric = self.ident(it.next().expect("metric"));
                                d.objective = Some(ObjectiveDecl {
                                    sense,
                                    metric,
                                    span: sspan,
                                });
                            }
                            Rule::evaluate_stmt => {
                                let st = s.into_inner().next().expect("evaluator string");
                                d.evaluator = Some((unescape(string_text(&st)), self.span(&st)));
                            }
                            r => unreachable!("grammar yields no problem statement {r:?}"),
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(d)
    }

    fn require(&self, p: P) -> R<Vec<ConstraintUse>> {
        p.into_inner().map(|q| self.constraint_use(q)).collect()
    }

    fn constraint_use(&self, p: P) -> R<ConstraintUse> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let name = self.ident(it.next().expect("constraint name"));
        // `near()` has an empty argument list; `near` has none at all.
        let has_parens = p_has_parens(span, &name, self.text);
        let args = match it.next() {
            Some(a) => Some(self.args(a)?),
            None if has_parens => Some(Vec::new()),
            None => None,
        };
        Ok(ConstraintUse { name, args, span })
    }

    fn test(&self, p: P) -> R<TestDecl> {
        let span = self.span(&p);
        let mut it = p.into_inner();
        let name_pair = it.next().expect("test name");
        let name_span = self.span(&name_pair);
        let name = unescape(string_text(&name_pair));
        let mut body = Vec::new();
        for q in it {
            let qspan = self.span(&q);
            body.push(match q.as_rule() {
                Rule::let_decl => TestStmt::Let(self.let_decl(q)?),
                Rule::partition_decl => TestStmt::Partition(self.partition(q)?),
                Rule::require_stmt => TestStmt::Require(self.require(q)?, qspan),
                Rule::place_stmt => {
                    let mut it = q.into_inner();
                    let graph = self.expr(it.next().expect("place graph"))?;
                    let package = self.expr(it.next().expect("place package"))?;
                    let mut entries = Vec::new();
                    for e in it {
                        let mut ei = e.into_inner();
                        let n = ei.next().expect("node name");
                        let node_span = self.span(&n);
                        let node = self.node_name(n);
                        let chip = self.expr(ei.next().expect("chip"))?;
                        entries.push(PlaceEntry { node, node_span, chip });
                    }
                    TestStmt::Place(PlaceStmt {
                        graph,
                        package,
                        entries,
                        span: qspan,
                    })
                }
                Rule::expect_stmt => {
                    let e = q.into_inner().next().expect("expectation");
                    let x = match e.as_rule() {
                        Rule::expect_valid => Expectation::Valid,
                        Rule::expect_unsat => Expectation::Unsatisfiable,
                        Rule::expect_sat => Expectation::Satisfiable,
                        _ => Expectation::Violates(e.into_inner().map(|c| self.constraint_use(c)).collect::<R<_>>()?),
                    };
                    TestStmt::Expect(x, qspan)
                }
                r => unreachable!("grammar yields no test statement {r:?}"),
            });
        }
        Ok(TestDecl {
            name,
            name_span,
            body,
            span,
        })
    }

    pub(super) fn node_name(&self, p: P) -> String {
        let inner = p.into_inner().next().expect("node name");
        match inner.as_rule() {
            Rule::string => unescape(string_text(&inner)),
            _ => inner.as_str().to_string(),
        }
    }

    pub(super) fn args(&self, p: P) -> R<Vec<Arg>> {
        p.into_inner()
            .map(|a| {
                let mut it = a.into_inner().peekable();
                let name = if it.peek().map(|q| q.as_rule()) == Some(Rule::ident) {
                    Some(self.ident(it.next().expect("argument name")))
                } else {
                    None
                };
                let value = self.expr(it.next().expect("argument value"))?;
                Ok(Arg { name, value })
            })
            .collect()
    }
}

fn p_has_parens(span: Span, name: &Ident, text: &str) -> bool {
    text.get(name.span.end as usize..span.end as usize)
        .is_some_and(|rest| rest.trim_start().starts_with('('))
}
