//! Table-driven tests of the plan validator: one row per diagnostic code,
//! plans with many problems at once, cycles named in full, references, and
//! the typed result of a valid plan.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use serde_json::{Value, json};
use stepwise_core::plan::validate::{ValidatedPlan, validate};
use stepwise_core::{
    Constraints, Diagnostic, DiagnosticCode, Limits, Precondition, Step, StepId, StepStatus,
    ToolCatalog, ToolSpec,
};

fn catalog() -> ToolCatalog {
    ToolCatalog::new([
        ToolSpec {
            name: "search".to_owned(),
            description: "Search the notes".to_owned(),
            args_schema: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            side_effect: false,
            idempotent: true,
            timeout_ms: None,
            destructive: false,
            output_schema: None,
        },
        ToolSpec {
            name: "send_mail".to_owned(),
            description: "Send an e-mail".to_owned(),
            args_schema: json!({
                "type": "object",
                "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
                "required": ["to", "body"]
            }),
            side_effect: true,
            idempotent: false,
            timeout_ms: None,
            destructive: false,
            output_schema: None,
        },
        // As an MCP server publishes it: an input and an output schema.
        ToolSpec {
            output_schema: Some(json!({
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "lines": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
                    "meta": {"$ref": "#/$defs/meta"}
                },
                "required": ["content"],
                "additionalProperties": false
            })),
            ..ToolSpec::new("fs.read_text_file", "Read a file")
        }
        .with_args_schema(json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "head": {"type": "number"}},
            "required": ["path"]
        })),
    ])
    .expect("the test catalogue compiles")
}

/// What a plan is validated against in one row.
#[derive(Default)]
struct Setup {
    constraints: Constraints,
    max_steps: Option<usize>,
}

fn run(plan: &Value, setup: &Setup) -> Result<Vec<Step>, Vec<Diagnostic>> {
    let tools = catalog();
    validate(
        plan,
        Limits {
            tools: &tools,
            max_steps: setup.max_steps,
            constraints: &setup.constraints,
        },
    )
    .map(ValidatedPlan::into_steps)
}

fn check(plan: &Value) -> Result<Vec<Step>, Vec<Diagnostic>> {
    run(plan, &Setup::default())
}

/// A well-formed search step; `extra` fields are merged over it.
fn search(id: &str, extra: Value) -> Value {
    let mut step = json!({
        "id": id,
        "description": format!("Search for {id}"),
        "tool": "search",
        "args": {"query": id},
        "acceptance_criteria": ["at least one hit"]
    });
    if let (Value::Object(step), Value::Object(extra)) = (&mut step, extra) {
        step.extend(extra);
    }
    step
}

/// A step reading a file through the MCP-like tool; `extra` merged over it.
fn read(id: &str, extra: Value) -> Value {
    let mut step = json!({
        "id": id,
        "description": format!("Read {id}"),
        "tool": "fs.read_text_file",
        "args": {"path": format!("{id}.md")},
        "acceptance_criteria": ["the file"]
    });
    if let (Value::Object(step), Value::Object(extra)) = (&mut step, extra) {
        step.extend(extra);
    }
    step
}

fn without(mut step: Value, field: &str) -> Value {
    if let Value::Object(obj) = &mut step {
        obj.remove(field);
    }
    step
}

fn codes(diags: &[Diagnostic]) -> Vec<DiagnosticCode> {
    let mut codes: Vec<_> = diags.iter().map(|d| d.code).collect();
    codes.sort();
    codes
}

fn describe(diags: &[Diagnostic]) -> String {
    diags
        .iter()
        .map(|d| format!("  {d} (at {})", d.path))
        .collect::<Vec<_>>()
        .join("\n")
}

struct Row {
    code: DiagnosticCode,
    plan: Value,
    setup: Setup,
    step: Option<&'static str>,
}

fn row(code: DiagnosticCode, step: Option<&'static str>, plan: Value) -> Row {
    Row {
        code,
        plan,
        setup: Setup::default(),
        step,
    }
}

fn rows() -> Vec<Row> {
    use DiagnosticCode as C;
    vec![
        row(
            C::InvalidPlan,
            None,
            json!({"stepz": [search("a", json!({}))]}),
        ),
        row(C::EmptyPlan, None, json!({"steps": []})),
        row(
            C::MissingField,
            Some("a"),
            json!([without(search("a", json!({})), "description")]),
        ),
        row(
            C::InvalidField,
            Some("a"),
            json!([search("a", json!({"acceptance_criteria": []}))]),
        ),
        row(
            C::UnknownField,
            Some("a"),
            json!([search("a", json!({"deps": []}))]),
        ),
        row(
            C::DuplicateStepId,
            Some("a"),
            json!([
                search("a", json!({})),
                search("a", json!({"args": {"query": "again"}}))
            ]),
        ),
        row(
            C::UnknownDependency,
            Some("a"),
            json!([search("a", json!({"depends_on": ["ghost"]}))]),
        ),
        row(
            C::SelfDependency,
            Some("a"),
            json!([search("a", json!({"depends_on": ["a"]}))]),
        ),
        row(
            C::DependencyCycle,
            Some("a"),
            json!([
                search("a", json!({"depends_on": ["b"]})),
                search("b", json!({"depends_on": ["a"]})),
            ]),
        ),
        row(
            C::DeadDependency,
            Some("b"),
            json!([
                search("a", json!({"status": "terminated", "attempts": 3})),
                search("b", json!({"depends_on": ["a"]})),
            ]),
        ),
        row(
            C::UnknownTool,
            Some("a"),
            json!([search("a", json!({"tool": "browse"}))]),
        ),
        Row {
            code: C::ToolNotAllowed,
            plan: json!([search("a", json!({}))]),
            setup: Setup {
                constraints: Constraints {
                    allowed_tools: Some(vec!["send_mail".to_owned()]),
                    ..Constraints::default()
                },
                max_steps: None,
            },
            step: Some("a"),
        },
        Row {
            code: C::SideEffectForbidden,
            plan: json!([{
                "id": "mail",
                "description": "Mail the summary",
                "tool": "send_mail",
                "args": {"to": "boss@example.com", "body": "done"},
                "acceptance_criteria": ["sent"]
            }]),
            setup: Setup {
                constraints: Constraints {
                    forbid_side_effects: true,
                    ..Constraints::default()
                },
                max_steps: None,
            },
            step: Some("mail"),
        },
        row(
            C::ArgsSchemaMismatch,
            Some("a"),
            json!([search("a", json!({"args": {"query": "x", "limit": "ten"}}))]),
        ),
        row(
            C::OpenArgumentSideEffect,
            Some("mail"),
            json!([{
                "id": "mail",
                "description": "Mail the summary",
                "tool": "send_mail",
                "args": {"to": "boss@example.com", "body": {"$open": "a summary of the findings"}},
                "acceptance_criteria": ["sent"]
            }]),
        ),
        row(
            C::MalformedReference,
            Some("b"),
            json!([
                search("a", json!({})),
                search(
                    "b",
                    json!({"depends_on": ["a"], "args": {"query": "${a.items}"}})
                ),
            ]),
        ),
        row(
            C::UnknownReference,
            Some("a"),
            json!([search("a", json!({"args": {"query": "$ghost"}}))]),
        ),
        row(
            C::ReferenceNotDependency,
            Some("b"),
            json!([
                search("a", json!({})),
                search("b", json!({"args": {"query": "$a"}})),
            ]),
        ),
        row(
            C::OutputSchemaMismatch,
            Some("b"),
            json!([
                read("a", json!({})),
                search(
                    "b",
                    json!({"depends_on": ["a"], "args": {"query": "${a.output.text}"}})
                ),
            ]),
        ),
        Row {
            code: C::TooManySteps,
            plan: json!([search("a", json!({})), search("b", json!({}))]),
            setup: Setup {
                constraints: Constraints::default(),
                max_steps: Some(1),
            },
            step: None,
        },
    ]
}

#[test]
fn the_table_has_one_row_per_diagnostic_code() {
    let rows = rows();
    let covered: Vec<DiagnosticCode> = rows.iter().map(|r| r.code).collect();
    for code in DiagnosticCode::ALL {
        let n = covered.iter().filter(|c| **c == code).count();
        assert_eq!(n, 1, "{code} has {n} rows; want exactly one");
    }
    assert_eq!(rows.len(), DiagnosticCode::ALL.len());
}

#[test]
fn each_row_reports_exactly_its_code_on_its_step() {
    for r in rows() {
        let diags = run(&r.plan, &r.setup).expect_err(r.code.as_str());
        let got: Vec<_> = diags
            .iter()
            .map(|d| (d.code, d.step.as_ref().map(StepId::as_str)))
            .collect();
        assert_eq!(
            got,
            [(r.code, r.step)],
            "row {}:\n{}",
            r.code,
            describe(&diags)
        );
        let d = &diags[0];
        assert_eq!(d.repairable, r.code.repairable(), "{}", r.code);
        assert!(
            d.path.is_empty() || d.path.starts_with("/steps"),
            "{}: path {:?}",
            r.code,
            d.path
        );
        assert_eq!(
            d.index.is_some(),
            r.step.is_some(),
            "{}: index {:?}",
            r.code,
            d.index
        );
        assert!(!d.message.trim().is_empty(), "{}: empty message", r.code);
        // The stable name round-trips through JSON.
        assert_eq!(
            serde_json::to_value(d.code).unwrap(),
            json!(r.code.as_str())
        );
    }
}

#[test]
fn only_a_forbidden_side_effect_is_not_repairable() {
    let not_repairable: Vec<_> = DiagnosticCode::ALL
        .into_iter()
        .filter(|c| !c.repairable())
        .collect();
    assert_eq!(not_repairable, [DiagnosticCode::SideEffectForbidden]);
}

#[test]
fn every_problem_is_reported_in_one_pass() {
    use DiagnosticCode as C;
    let plan = json!({"steps": [
        // unknown field + unknown tool
        search("a", json!({"tool": "browse", "deps": ["x"]})),
        // schema mismatch (limit) + unknown dependency
        search("b", json!({"args": {"query": "q", "limit": 0}, "depends_on": ["ghost"]})),
        // two-step cycle c <-> d
        search("c", json!({"depends_on": ["d"]})),
        search("d", json!({"depends_on": ["c"]})),
        // missing acceptance criteria + reference to a non-dependency
        without(search("e", json!({"args": {"query": "$a"}})), "acceptance_criteria"),
        // duplicate id + malformed reference
        search("a", json!({"args": {"query": "${a"}})),
        // not an object at all
        42,
        // unknown reference + missing tool
        without(search("f", json!({"args": {"query": "${nobody.output}"}})), "tool"),
    ]});
    let diags = check(&plan).expect_err("many problems");
    let mut want = vec![
        C::UnknownField,
        C::UnknownTool,
        C::ArgsSchemaMismatch,
        C::UnknownDependency,
        C::DependencyCycle,
        C::MissingField,
        C::ReferenceNotDependency,
        C::DuplicateStepId,
        C::MalformedReference,
        C::InvalidField,
        C::UnknownReference,
        C::MissingField,
    ];
    want.sort();
    assert_eq!(codes(&diags), want, "\n{}", describe(&diags));
    // Reported in plan order within each pass, each pointing at its step.
    let not_an_object = diags
        .iter()
        .find(|d| d.code == C::InvalidField)
        .expect("the non-object step");
    assert_eq!(not_an_object.index, Some(6));
    assert_eq!(not_an_object.step, None);
    assert!(not_an_object.to_string().contains("step #7"));
}

#[test]
fn too_many_steps_is_reported_alongside_other_problems() {
    let plan = json!([
        search("a", json!({"tool": "browse"})),
        search("b", json!({})),
        search("c", json!({})),
    ]);
    let setup = Setup {
        max_steps: Some(2),
        ..Setup::default()
    };
    let diags = run(&plan, &setup).expect_err("too many");
    assert_eq!(
        codes(&diags),
        [DiagnosticCode::UnknownTool, DiagnosticCode::TooManySteps]
    );
    let too_many = diags
        .iter()
        .find(|d| d.code == DiagnosticCode::TooManySteps);
    assert!(too_many.unwrap().message.contains("3 steps"));
}

#[test]
fn skipped_steps_do_not_count_towards_max_steps() {
    let plan = json!([
        search("a", json!({"status": "skipped"})),
        search("b", json!({})),
    ]);
    let setup = Setup {
        max_steps: Some(1),
        ..Setup::default()
    };
    assert!(run(&plan, &setup).is_ok());
}

/// A ring of `n` steps named s0..s(n-1), each depending on the next, after
/// an unrelated leading step so the ring does not start at index 0.
fn ring(names: &[&str]) -> Value {
    let mut steps = vec![search("intro", json!({}))];
    for (i, name) in names.iter().enumerate() {
        let next = names[(i + 1) % names.len()];
        steps.push(search(name, json!({"depends_on": [next]})));
    }
    Value::Array(steps)
}

#[test]
fn cycles_of_two_three_and_five_steps_are_named_in_full() {
    for (names, text) in [
        (&["a", "b"][..], "a → b → a"),
        (&["a", "b", "c"][..], "a → b → c → a"),
        (&["a", "b", "c", "d", "e"][..], "a → b → c → d → e → a"),
    ] {
        let diags = check(&ring(names)).expect_err(text);
        assert_eq!(
            codes(&diags),
            [DiagnosticCode::DependencyCycle],
            "{text}:\n{}",
            describe(&diags)
        );
        let d = &diags[0];
        assert!(d.message.contains(text), "{text}: {}", d.message);
        assert_eq!(d.step, Some(StepId::new("a")));
        assert_eq!(d.index, Some(1));
        assert_eq!(d.path, "/steps/1/depends_on");
    }
}

#[test]
fn a_cycle_is_named_from_its_first_step_in_plan_order() {
    // Listed c, a, b: c depends on a, a on b, b on c.
    let plan = json!([
        search("c", json!({"depends_on": ["a"]})),
        search("a", json!({"depends_on": ["b"]})),
        search("b", json!({"depends_on": ["c"]})),
    ]);
    let diags = check(&plan).expect_err("cycle");
    assert_eq!(diags.len(), 1, "{}", describe(&diags));
    assert!(
        diags[0].message.contains("c → a → b → c"),
        "{}",
        diags[0].message
    );
    assert_eq!(diags[0].step, Some(StepId::new("c")));
}

#[test]
fn two_separate_cycles_are_two_diagnostics() {
    let plan = json!([
        search("a", json!({"depends_on": ["b"]})),
        search("b", json!({"depends_on": ["a"]})),
        search("x", json!({"depends_on": ["y"]})),
        search("y", json!({"depends_on": ["z"]})),
        search("z", json!({"depends_on": ["x"]})),
        search("ok", json!({"depends_on": ["a", "x"]})),
    ]);
    let diags = check(&plan).expect_err("cycles");
    let messages: Vec<_> = diags.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages[0].contains("a → b → a"), "{messages:?}");
    assert!(messages[1].contains("x → y → z → x"), "{messages:?}");
}

#[test]
fn a_reference_to_a_step_that_is_not_a_dependency_is_flagged() {
    let plan = json!([
        search("a", json!({})),
        search("b", json!({})),
        search("c", json!({"depends_on": ["b"], "args": {"query": "$a"}})),
    ]);
    let diags = check(&plan).expect_err("not a dependency");
    assert_eq!(codes(&diags), [DiagnosticCode::ReferenceNotDependency]);
    assert_eq!(diags[0].step, Some(StepId::new("c")));
    assert_eq!(diags[0].path, "/steps/2/args");
    assert!(diags[0].message.contains("depends_on"), "{}", diags[0]);
}

#[test]
fn a_reference_to_a_transitive_dependency_is_fine() {
    let plan = json!([
        search("a", json!({})),
        search("b", json!({"depends_on": ["a"]})),
        search("c", json!({"depends_on": ["b"], "args": {"query": "$a"}})),
    ]);
    let steps = check(&plan).unwrap_or_else(|d| panic!("{}", describe(&d)));
    assert_eq!(steps.len(), 3);
}

#[test]
fn paths_braces_and_interpolation_are_fine() {
    let plan = json!([
        search("a", json!({})),
        search("b", json!({})),
        search(
            "c",
            json!({
                "depends_on": ["a", "b"],
                "args": {"query": "compare ${a.output.items[0]} with ${b} (costs $5, $${literal})"},
                "preconditions": [
                    {"check": "non_empty", "ref": "${a.output.items}"},
                    {"check": "exists", "ref": "$b"},
                    {"check": "equals", "ref": "${b.output.status}", "value": "ok"}
                ]
            })
        ),
        search(
            "d",
            json!({"depends_on": ["a"], "args": {"query": "${a.output.items[0]}"}})
        ),
    ]);
    let steps = check(&plan).unwrap_or_else(|d| panic!("{}", describe(&d)));
    assert_eq!(steps.len(), 4);
}

#[test]
fn references_in_preconditions_are_checked_too() {
    let plan = json!([
        search("a", json!({})),
        search(
            "b",
            json!({"preconditions": [
                {"check": "exists", "ref": "${a.output.items}"},
                {"check": "exists", "ref": "${ghost}"},
                {"check": "exists", "ref": "${a.items}"}
            ]})
        ),
    ]);
    let diags = check(&plan).expect_err("bad preconditions");
    let got: Vec<_> = diags.iter().map(|d| (d.code, d.path.as_str())).collect();
    assert_eq!(
        got,
        [
            (
                DiagnosticCode::ReferenceNotDependency,
                "/steps/1/preconditions/0/ref"
            ),
            (
                DiagnosticCode::UnknownReference,
                "/steps/1/preconditions/1/ref"
            ),
            (
                DiagnosticCode::MalformedReference,
                "/steps/1/preconditions/2/ref"
            ),
        ],
        "\n{}",
        describe(&diags)
    );
}

#[test]
fn a_reference_to_its_own_step_is_not_a_dependency() {
    let plan = json!([search("a", json!({"args": {"query": "$a"}}))]);
    let diags = check(&plan).expect_err("self reference");
    assert_eq!(codes(&diags), [DiagnosticCode::ReferenceNotDependency]);
}

#[test]
fn a_reference_where_the_schema_wants_an_integer_is_deferred_to_dispatch() {
    let plan = json!([
        search("a", json!({})),
        search(
            "b",
            json!({"depends_on": ["a"], "args": {"query": "q", "limit": "${a.output.count}"}})
        ),
        search(
            "c",
            json!({"depends_on": ["a"], "args": {"query": "q", "limit": "$a"}})
        ),
    ]);
    let steps = check(&plan).unwrap_or_else(|d| panic!("{}", describe(&d)));
    assert_eq!(steps[1].args["limit"], json!("${a.output.count}"));
    // Text that merely contains a dollar is not a reference: still checked.
    let plan = json!([search("a", json!({"args": {"query": "q", "limit": "$5"}}))]);
    let diags = check(&plan).expect_err("$5 is not a reference");
    assert_eq!(codes(&diags), [DiagnosticCode::ArgsSchemaMismatch]);
    assert_eq!(diags[0].path, "/steps/0/args/limit");
}

#[test]
fn an_open_argument_is_accepted_only_when_marked_and_never_for_side_effects() {
    // A required argument left open, and an optional one: valid, kept as written.
    let plan = json!([
        search("a", json!({})),
        search(
            "b",
            json!({"depends_on": ["a"], "args": {
                "query": {"$open": "a narrower query built from ${a.output}"},
                "limit": {"$open": "how many hits are worth reading"}
            }})
        ),
    ]);
    let steps = check(&plan).unwrap_or_else(|d| panic!("{}", describe(&d)));
    assert_eq!(
        steps[1].args["query"],
        json!({"$open": "a narrower query built from ${a.output}"})
    );
    // Missing without a marker: still a schema mismatch.
    let diags = check(&json!([search("a", json!({"args": {"limit": 2}}))])).expect_err("missing");
    assert_eq!(codes(&diags), [DiagnosticCode::ArgsSchemaMismatch]);
    // An open argument the schema does not know is still refused
    // (`additionalProperties: false`).
    let diags = check(&json!([search(
        "a",
        json!({"args": {"query": "q", "lang": {"$open": "the language"}}})
    )]))
    .expect_err("unknown argument");
    assert_eq!(codes(&diags), [DiagnosticCode::ArgsSchemaMismatch]);
    // Malformed and nested markers are format errors, pointing at them.
    let diags = check(&json!([
        search("a", json!({"args": {"query": {"$open": "q", "also": 1}}})),
        search(
            "b",
            json!({"args": {"query": "q", "limit": [{"$open": "n"}]}})
        ),
    ]))
    .expect_err("malformed");
    let invalid: Vec<&str> = diags
        .iter()
        .filter(|d| d.code == DiagnosticCode::InvalidField)
        .map(|d| d.path.as_str())
        .collect();
    assert_eq!(
        invalid,
        ["/steps/0/args/query", "/steps/1/args/limit/0"],
        "{}",
        describe(&diags)
    );
    // Side effects: every open argument is named, and a repairer may fix it.
    let diags = check(&json!([{
        "id": "mail",
        "description": "Mail the summary",
        "tool": "send_mail",
        "args": {"to": {"$open": "who asked"}, "body": {"$open": "the summary"}},
        "acceptance_criteria": ["sent"]
    }]))
    .expect_err("side effects");
    assert_eq!(
        codes(&diags),
        [
            DiagnosticCode::OpenArgumentSideEffect,
            DiagnosticCode::OpenArgumentSideEffect
        ]
    );
    assert!(diags.iter().all(|d| d.repairable));
    assert!(
        diags[0].message.contains("side effects") && diags[0].message.contains("approval"),
        "{}",
        diags[0].message
    );
}

#[test]
fn schema_mismatches_point_at_the_offending_argument() {
    let plan = json!([
        search(
            "a",
            json!({"args": {"query": 7, "limit": 0, "extra": true}})
        ),
        search("b", json!({"args": {}})),
    ]);
    let diags = check(&plan).expect_err("mismatches");
    assert!(
        diags
            .iter()
            .all(|d| d.code == DiagnosticCode::ArgsSchemaMismatch),
        "{}",
        describe(&diags)
    );
    let paths: BTreeSet<_> = diags.iter().map(|d| d.path.as_str()).collect();
    for want in [
        "/steps/0/args/query",
        "/steps/0/args/limit",
        "/steps/0/args",
        "/steps/1/args",
    ] {
        assert!(paths.contains(want), "{want} not in {paths:?}");
    }
}

#[test]
fn a_valid_plan_returns_typed_steps() {
    let plan = json!({"version": 3, "steps": [
        search("find", json!({"args": {"query": "rag", "limit": 5}})),
        {
            "id": "compare",
            "description": "Compare the hits",
            "tool": "search",
            "args": {"query": "${find.output.items[0]}"},
            "depends_on": ["find"],
            "preconditions": [{"check": "non_empty", "ref": "${find.output.items}"}],
            "acceptance_criteria": ["a comparison", "cites sources"]
        }
    ]});
    let steps = check(&plan).unwrap_or_else(|d| panic!("{}", describe(&d)));
    let expected = vec![
        Step::new("find", "Search for find", "search")
            .with_args(json!({"query": "rag", "limit": 5}))
            .accept("at least one hit"),
        Step::new("compare", "Compare the hits", "search")
            .with_args(json!({"query": "${find.output.items[0]}"}))
            .after(["find"])
            .require(Precondition::NonEmpty {
                reference: "${find.output.items}".to_owned(),
            })
            .accept("a comparison")
            .accept("cites sources"),
    ];
    assert_eq!(steps, expected);
    assert!(steps.iter().all(|s| s.status == StepStatus::Pending));
}

#[test]
fn a_bare_array_and_an_object_give_the_same_steps() {
    let steps = json!([
        search("a", json!({})),
        search("b", json!({"depends_on": ["a"]}))
    ]);
    let from_array = check(&steps).unwrap();
    let from_object = check(&json!({ "steps": steps })).unwrap();
    assert_eq!(from_array, from_object);
}

#[test]
fn statuses_and_attempts_survive_validation() {
    let plan = json!([
        search("a", json!({"status": "succeeded", "attempts": 2})),
        search("b", json!({"depends_on": ["a"]})),
    ]);
    let steps = check(&plan).unwrap();
    assert_eq!(steps[0].status, StepStatus::Succeeded);
    assert_eq!(steps[0].attempts, 2);
}

#[test]
fn a_finished_step_may_depend_on_a_dead_one() {
    // Only steps that still have to run are stuck behind a dead dependency.
    let plan = json!([
        search("a", json!({"status": "terminated"})),
        search("b", json!({"depends_on": ["a"], "status": "skipped"})),
    ]);
    assert!(check(&plan).is_ok());
}

#[test]
fn null_optional_fields_count_as_absent() {
    let plan = json!([search(
        "a",
        json!({"args": {"query": "q"}, "depends_on": null, "preconditions": null})
    ), {
        "id": "b",
        "description": "No args at all",
        "tool": "search",
        "args": null,
        "acceptance_criteria": ["x"]
    }]);
    // `b` has no `query`, so its (absent) args miss a required property; the
    // nulls themselves are fine.
    let diags = check(&plan).expect_err("b misses query");
    assert_eq!(
        codes(&diags),
        [DiagnosticCode::ArgsSchemaMismatch],
        "{}",
        describe(&diags)
    );
    let plan = json!([search(
        "a",
        json!({"depends_on": null, "preconditions": null})
    )]);
    let steps = check(&plan).unwrap_or_else(|d| panic!("{}", describe(&d)));
    assert!(steps[0].depends_on.is_empty());
    assert!(steps[0].preconditions.is_empty());
}

#[test]
fn out_of_range_attempts_are_an_invalid_field_on_the_step() {
    let plan = json!([search("a", json!({"attempts": 5_000_000_000u64}))]);
    let diags = check(&plan).expect_err("attempts overflow u32");
    let got: Vec<_> = diags
        .iter()
        .map(|d| (d.code, d.step.as_ref().map(StepId::as_str), d.path.as_str()))
        .collect();
    assert_eq!(
        got,
        [(DiagnosticCode::InvalidField, Some("a"), "/steps/0/attempts")]
    );
}

#[test]
fn diagnostics_serialise_with_stable_names() {
    let diags = check(&json!([search("a", json!({"tool": "browse"}))])).unwrap_err();
    let v = serde_json::to_value(&diags).unwrap();
    assert_eq!(v[0]["code"], "unknown_tool");
    assert_eq!(v[0]["step"], "a");
    assert_eq!(v[0]["index"], 0);
    assert_eq!(v[0]["path"], "/steps/0/tool");
    assert_eq!(v[0]["repairable"], true);
    assert!(
        v[0]["message"]
            .as_str()
            .unwrap()
            .contains("search, send_mail")
    );
}

#[test]
fn references_are_checked_against_the_output_schema_of_the_tool_they_read() {
    use DiagnosticCode as C;
    let after = |args: Value| search("b", json!({"depends_on": ["a"], "args": args}));
    // Fields and elements the schema has pass, as do paths it cannot tell
    // about (a `$ref`) and references to tools without an output schema.
    for args in [
        json!({"query": "${a.output.content}"}),
        json!({"query": "${a.output.lines[2].n} lines"}),
        json!({"query": "${a.output.meta.anything}"}),
    ] {
        check(&json!([read("a", json!({})), after(args.clone())]))
            .unwrap_or_else(|d| panic!("{args}:\n{}", describe(&d)));
    }
    check(&json!([
        search("a", json!({})),
        after(json!({"query": "${a.output.whatever}"}))
    ]))
    .unwrap_or_else(|d| panic!("{}", describe(&d)));

    let problems = |args: Value| {
        check(&json!([read("a", json!({})), after(args)])).expect_err("a schema mismatch")
    };
    let d = problems(json!({"query": "${a.output.text}"}));
    assert_eq!(codes(&d), [C::OutputSchemaMismatch]);
    assert_eq!(d[0].path, "/steps/1/args");
    assert!(
        d[0].message.contains("${a.output.text}")
            && d[0].message.contains("it has: content, lines, meta"),
        "{}",
        d[0].message
    );
    // A string has no fields, an object is not an array — in preconditions too.
    let d = problems(json!({"query": "${a.output.content.first}"}));
    assert!(
        d[0].message
            .contains("output.content is a string, which has no field `first`"),
        "{}",
        d[0].message
    );
    let d = problems(json!({"query": "${a.output.content[0]}"}));
    assert!(d[0].message.contains("not an array"), "{}", d[0].message);
    let d = check(&json!([
        read("a", json!({})),
        search("b", json!({"depends_on": ["a"], "preconditions": [{"check": "non_empty", "ref": "${a.output.items}"}]})),
    ]))
    .expect_err("a precondition on a field the output lacks");
    assert_eq!(codes(&d), [C::OutputSchemaMismatch]);
    assert_eq!(d[0].path, "/steps/1/preconditions/0/ref");
}

#[test]
fn typed_acceptance_checks_are_checked_against_the_steps_own_output_schema() {
    use DiagnosticCode as C;
    let with = |criteria: Value| read("a", json!({"acceptance_criteria": criteria}));
    // Paths the schema has, or cannot tell about, and tools without a schema pass.
    for criteria in [
        json!([{"check": "non_empty", "path": "content"}]),
        json!([{"check": "min_results", "path": "lines", "min": 2}]),
        json!([{"check": "field_present", "path": "lines[0].n"}]),
        json!([{"check": "matches", "path": "content", "pattern": "ok"}]),
        json!([{"check": "non_empty", "path": "meta.anything"}]),
        json!([{"check": "json_schema", "schema": {"type": "object"}}, "the file"]),
    ] {
        check(&json!([with(criteria.clone())]))
            .unwrap_or_else(|d| panic!("{criteria}:\n{}", describe(&d)));
    }
    check(&json!([search(
        "a",
        json!({"acceptance_criteria": [{"check": "non_empty", "path": "whatever"}]})
    )]))
    .unwrap_or_else(|d| panic!("{}", describe(&d)));

    let d = check(&json!([with(
        json!(["the file", {"check": "non_empty", "path": "text"}])
    )]))
    .expect_err("a field the output lacks");
    assert_eq!(codes(&d), [C::OutputSchemaMismatch]);
    assert_eq!(d[0].path, "/steps/0/acceptance_criteria/1");
    assert!(
        d[0].message.contains("checks `text`")
            && d[0].message.contains("it has: content, lines, meta"),
        "{}",
        d[0].message
    );
    let d = check(&json!([with(
        json!([{"check": "min_results", "path": "content"}])
    )]))
    .expect_err("min_results on a string");
    assert_eq!(codes(&d), [C::OutputSchemaMismatch]);
    assert!(
        d[0].message
            .contains("says `content` is a string, and this check needs an array"),
        "{}",
        d[0].message
    );
    let d = check(&json!([with(
        json!([{"check": "matches", "path": "lines", "pattern": "x"}])
    )]))
    .expect_err("matches on an array");
    assert_eq!(codes(&d), [C::OutputSchemaMismatch]);
    // A step that already ran was judged: its criteria are not checked again.
    check(&json!([with(
        json!([{"check": "non_empty", "path": "text"}])
    )
    .as_object()
    .map(|o| {
        let mut o = o.clone();
        o.insert("status".into(), json!("succeeded"));
        Value::Object(o)
    })
    .unwrap()]))
    .unwrap_or_else(|d| panic!("{}", describe(&d)));
}

#[test]
fn a_whole_reference_must_have_the_type_its_argument_asks_for() {
    use DiagnosticCode as C;
    // `query` wants a string; `lines` is an array and keeps its type.
    let d = check(&json!([
        read("a", json!({})),
        search(
            "b",
            json!({"depends_on": ["a"], "args": {"query": "${a.output.lines}"}})
        ),
    ]))
    .expect_err("an array for a string");
    assert_eq!(codes(&d), [C::OutputSchemaMismatch]);
    assert_eq!(d[0].path, "/steps/1/args/query");
    assert!(
        d[0].message
            .contains("wants a string but ${a.output.lines} is an array"),
        "{}",
        d[0].message
    );
    // Inside longer text it is interpolated as text: no type to check.
    check(&json!([
        read("a", json!({})),
        search(
            "b",
            json!({"depends_on": ["a"], "args": {"query": "lines: ${a.output.lines}"}})
        ),
    ]))
    .unwrap_or_else(|d| panic!("{}", describe(&d)));
    // An integer fills a number.
    check(&json!([
        read("a", json!({})),
        read("b", json!({"depends_on": ["a"], "args": {"path": "${a.output.content}", "head": "${a.output.lines[0].n}"}})),
    ]))
    .unwrap_or_else(|d| panic!("{}", describe(&d)));
}

#[test]
fn mcp_input_schemas_are_checked_before_anything_runs() {
    use DiagnosticCode as C;
    // `path` is required and a string; `head` a number.
    let d = check(&json!([read("a", json!({"args": {"head": "ten"}}))])).expect_err("bad args");
    assert_eq!(codes(&d), [C::ArgsSchemaMismatch, C::ArgsSchemaMismatch]);
    let paths: BTreeSet<&str> = d.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(
        paths,
        BTreeSet::from(["/steps/0/args", "/steps/0/args/head"])
    );
}

#[test]
fn acceptance_criteria_are_text_or_well_formed_typed_checks() {
    let with = |criteria: Value| {
        check(&json!({"steps": [{
            "id": "a", "description": "find", "tool": "search", "args": {"query": "x"},
            "acceptance_criteria": criteria
        }]}))
    };
    assert!(with(json!(["a hit", {"check": "min_results", "path": "results"}])).is_ok());
    for (bad, says) in [
        (json!([{"check": "nosuch"}]), "not a check the engine knows"),
        (
            json!([{"check": "matches", "path": "title", "pattern": "("}]),
            "bad pattern",
        ),
        (
            json!([{"check": "field_present", "path": "a[x]"}]),
            "bad path",
        ),
        (
            json!([{"check": "non_empty", "pth": "x"}]),
            "not a check the engine knows",
        ),
        (json!([""]), "non-empty text"),
        (json!("a hit"), "must be a list"),
    ] {
        let diags = with(bad.clone()).unwrap_err();
        assert!(
            diags
                .iter()
                .any(|d| d.message.contains(says)
                    && d.path.starts_with("/steps/0/acceptance_criteria")),
            "{bad}: {diags:?}"
        );
    }
}
