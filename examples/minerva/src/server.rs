//! The MCP side: seed 000's five tools, each with its input and output
//! schema and `readOnlyHint`, answered from the dictionary. Every call is
//! counted and logged (stderr, and one JSON line per call in the call log
//! when there is one), so a test can count what a run asked for.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::dictionary::{Dictionary, domain_summary, flatten_terms};
use crate::parse::{Language, parse};

/// The server: the dictionary, and the count of calls it has answered.
#[derive(Debug, Clone)]
pub(crate) struct Minerva {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dict: Dictionary,
    calls: AtomicU64,
    call_log: Option<Mutex<std::fs::File>>,
}

impl Minerva {
    pub(crate) fn new(dict: Dictionary, call_log: Option<PathBuf>) -> Result<Self, String> {
        let call_log = match call_log {
            None => None,
            Some(path) => Some(Mutex::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .map_err(|e| format!("cannot open the call log {}: {e}", path.display()))?,
            )),
        };
        Ok(Self {
            inner: Arc::new(Inner {
                dict,
                calls: AtomicU64::new(0),
                call_log,
            }),
        })
    }

    /// Answers one call: the structured result, or the message of an error
    /// result (bad arguments, an unknown tool).
    pub(crate) fn answer(&self, tool: &str, args: &JsonObject) -> Result<Value, String> {
        let dict = &self.inner.dict;
        match tool {
            "parse_columns" => {
                let source = match args.get("source") {
                    Some(Value::String(s)) if !s.trim().is_empty() => s,
                    _ => return Err("`source` must be the code, as non-empty text".to_owned()),
                };
                let language = match args.get("language").and_then(Value::as_str) {
                    None | Some("auto") => Language::detect(source),
                    Some("sql") => Language::Sql,
                    Some("python") => Language::Python,
                    Some(other) => {
                        return Err(format!("unknown language {other:?}: sql, python or auto"));
                    }
                };
                known_keys(args, &["source", "language"])?;
                Ok(parse(source, language).to_json(language))
            }
            "search_standardization_docs" => Ok(dict.search(&terms(args)?)),
            "classify_domain_group" => Ok(dict.classify(&terms(args)?)),
            "lookup_index_candidates" => Ok(dict.index_candidates(&terms(args)?)),
            "lookup_abbreviation" => Ok(dict.abbreviation(&terms(args)?)),
            other => Err(format!("no tool named {other:?}")),
        }
    }

    /// Counts and logs a call.
    fn record(&self, tool: &str, args: &JsonObject, outcome: &Result<Value, String>) {
        let n = self.inner.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let summary = match outcome {
            Ok(v) => summarise(tool, v),
            Err(e) => format!("error: {e}"),
        };
        let _ = writeln!(
            std::io::stderr(),
            "minerva-server: call {n}: {tool} → {summary}"
        );
        if let Some(log) = &self.inner.call_log
            && let Ok(mut f) = log.lock()
        {
            let line = json!({"n": n, "tool": tool, "arguments": args, "ok": outcome.is_ok()});
            let _ = writeln!(f, "{line}");
        }
    }
}

fn known_keys(args: &JsonObject, known: &[&str]) -> Result<(), String> {
    match args.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!(
            "unknown argument `{k}` (known: {})",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

fn terms(args: &JsonObject) -> Result<Vec<String>, String> {
    known_keys(args, &["terms"])?;
    let value = args
        .get("terms")
        .ok_or_else(|| "`terms` is required: a list of terms".to_owned())?;
    let terms = flatten_terms(value)?;
    if terms.is_empty() {
        return Err("`terms` holds no term".to_owned());
    }
    if terms.len() > MAX_TERMS {
        return Err(format!(
            "at most {MAX_TERMS} terms per call, not {}",
            terms.len()
        ));
    }
    Ok(terms)
}

const MAX_TERMS: usize = 200;

fn summarise(tool: &str, v: &Value) -> String {
    let len = |k: &str| v[k].as_array().map_or(0, Vec::len);
    match tool {
        "parse_columns" => format!(
            "{} column(s) in {}",
            len("columns"),
            v["language"].as_str().unwrap_or("?")
        ),
        "search_standardization_docs" => {
            format!("{} matched, {} unmatched", len("matched"), len("unmatched"))
        }
        "classify_domain_group" => format!(
            "{} classified, {} unclassified",
            len("results"),
            len("unclassified")
        ),
        "lookup_index_candidates" => format!(
            "{} candidate(s) of {}, {} unknown",
            len("candidates"),
            len("results"),
            len("unknown")
        ),
        "lookup_abbreviation" => {
            format!(
                "{} resolved, {} unresolved",
                len("resolved"),
                len("unresolved")
            )
        }
        _ => String::new(),
    }
}

fn object(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The `terms` argument of the batch tools.
fn terms_input(what: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            "terms": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_TERMS,
                "description": format!(
                    "{what}. A list may hold lists, which are flattened: \
                     [\"${{a.output.matched}}\", \"${{b.output.matched}}\"] joins two searches' matches."
                ),
                "items": {"anyOf": [
                    {"type": "string", "minLength": 1},
                    {"type": "array", "items": {"type": "string"}}
                ]}
            }
        },
        "required": ["terms"],
        "additionalProperties": false
    })
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn output(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

fn term_match() -> Value {
    json!({"type": "object", "properties": {
        "standard_name": {"type": "string", "description": "the standard name, in Korean"},
        "standard_name_en": {"type": "string"},
        "abbreviation": {"type": "string", "description": "the standard abbreviation (a column name)"},
        "domain_group": {"type": "string"},
        "definition": {"type": "string"},
        "matched_on": {"type": "string"},
        "basis": {"type": "string"}
    }})
}

/// The five tools, as listed.
pub(crate) fn tools() -> Vec<Tool> {
    let read_only = |title: &str| {
        ToolAnnotations::with_title(title)
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false)
    };
    let tool =
        |name: &'static str, title: &str, description: &'static str, input: Value, out: Value| {
            Tool::new(name, description, object(input))
                .with_title(title)
                .with_raw_output_schema(object(out))
                .with_annotations(read_only(title))
        };
    vec![
        tool(
            "parse_columns",
            "Parse columns",
            "Extract the column names a piece of SQL or Python (pandas, SQLAlchemy) code uses, \
             in the order they first appear, with where each is used. SQL keywords, functions, \
             tables and aliases are left out.",
            json!({
                "type": "object",
                "properties": {
                    "source": {"type": "string", "minLength": 1, "description": "the code"},
                    "language": {"type": "string", "enum": ["auto", "sql", "python"], "default": "auto"}
                },
                "required": ["source"],
                "additionalProperties": false
            }),
            output(
                json!({
                    "language": {"type": "string"},
                    "columns": strings(),
                    "details": {"type": "array", "items": {"type": "object", "properties": {
                        "name": {"type": "string"}, "uses": strings()
                    }}},
                    "tables": strings()
                }),
                &["language", "columns", "details", "tables"],
            ),
        ),
        tool(
            "search_standardization_docs",
            "Search the standard terms",
            "Batch search of the standard-terms dictionary: for each term (a column name, a \
             standard name in Korean or English, or an abbreviation), the standard terms it \
             names exactly — standard name, abbreviation, domain group, definition. `matched` \
             lists the standard abbreviations found, in order; `unmatched` the terms with no \
             match (try lookup_abbreviation on those).",
            terms_input("Terms to look up"),
            output(
                json!({
                    "results": {"type": "array", "items": {"type": "object", "properties": {
                        "term": {"type": "string"},
                        "matches": {"type": "array", "items": term_match()}
                    }}},
                    "matched": strings(),
                    "unmatched": strings()
                }),
                &["results", "matched", "unmatched"],
            ),
        ),
        tool(
            "classify_domain_group",
            "Classify domain groups",
            "Batch: the domain group of each term (번호 number, 코드 code, 일자 date, …) with \
             its data type — from the dictionary, or else from the term's class word (its last \
             word).",
            terms_input("Standard abbreviations, standard names or column names"),
            output(
                json!({
                    "results": {"type": "array", "items": {"type": "object", "properties": {
                        "term": {"type": "string"},
                        "abbreviation": {"type": ["string", "null"]},
                        "standard_name": {"type": ["string", "null"]},
                        "domain_group": {"type": "string"},
                        "domain_group_en": {"type": "string"},
                        "data_type": {"type": "string"},
                        "basis": {"type": "string"}
                    }}},
                    "unclassified": strings()
                }),
                &["results", "unclassified"],
            ),
        ),
        tool(
            "lookup_index_candidates",
            "Look up index candidates",
            "Batch: whether each standard term's column is an index candidate and how \
             (primary key, foreign key, B-tree, composite), by the term's own hint and its \
             domain group's rule. `candidates` lists the abbreviations worth indexing.",
            terms_input("Standard abbreviations or standard names"),
            output(
                json!({
                    "results": {"type": "array", "items": {"type": "object", "properties": {
                        "term": {"type": "string"},
                        "abbreviation": {"type": "string"},
                        "standard_name": {"type": "string"},
                        "domain_group": {"type": "string"},
                        "candidate": {"type": "boolean"},
                        "index": {"type": "string"},
                        "reason": {"type": "string"},
                        "domain_rule": {"type": "string"}
                    }}},
                    "candidates": strings(),
                    "unknown": strings()
                }),
                &["results", "candidates", "unknown"],
            ),
        ),
        tool(
            "lookup_abbreviation",
            "Look up an abbreviation",
            "Batch: read a non-standard column name word by word (pat → PTNT 환자, idnt → IDNT \
             식별, no → NO 번호) and return the standard terms those words make. `resolved` \
             lists the standard abbreviation of each term that resolves to exactly one \
             (search for those); `unresolved` the rest.",
            terms_input("Non-standard column names or abbreviations"),
            output(
                json!({
                    "results": {"type": "array", "items": {"type": "object", "properties": {
                        "term": {"type": "string"},
                        "segments": {"type": "array"},
                        "candidates": {"type": "array", "items": term_match()}
                    }}},
                    "resolved": strings(),
                    "unresolved": strings()
                }),
                &["results", "resolved", "unresolved"],
            ),
        ),
    ]
}

impl ServerHandler for Minerva {
    fn get_info(&self) -> ServerConfig {
        let (terms, words, _) = self.inner.dict.counts();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "minerva-server",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(format!(
                "MINERVA data standardisation (seed 000): a dictionary of {terms} standard terms \
                 made of {words} standard words, in Korean and English. Batch tools take a \
                 list of terms. Domain groups: {}. Typical plan: parse_columns → \
                 search_standardization_docs → classify_domain_group and \
                 lookup_index_candidates on the matched abbreviations; lookup_abbreviation \
                 for what the search left unmatched.",
                domain_summary(&self.inner.dict)
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let outcome = self.answer(&request.name, &args);
        self.record(&request.name, &args, &outcome);
        Ok(match outcome {
            Ok(value) => CallToolResult::structured(value),
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        }
        .into())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn server() -> Minerva {
        Minerva::new(Dictionary::built_in().unwrap(), None).unwrap()
    }

    fn args(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn five_read_only_tools_with_input_and_output_schemas() {
        let tools = tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "parse_columns",
                "search_standardization_docs",
                "classify_domain_group",
                "lookup_index_candidates",
                "lookup_abbreviation"
            ]
        );
        for t in &tools {
            let a = t.annotations.as_ref().unwrap();
            assert_eq!(a.read_only_hint, Some(true), "{}", t.name);
            assert_eq!(a.destructive_hint, Some(false));
            assert!(t.output_schema.is_some() && t.input_schema.contains_key("properties"));
        }
    }

    #[test]
    fn outputs_fit_their_schemas_and_bad_arguments_are_error_results() {
        let s = server();
        let ok = s
            .answer(
                "parse_columns",
                &args(json!({"source": "SELECT a.ward_code FROM admissions a"})),
            )
            .unwrap();
        assert_eq!(ok["columns"], json!(["ward_code"]));
        let search = s
            .answer(
                "search_standardization_docs",
                &args(json!({"terms": [["ward_code"], "x"]})),
            )
            .unwrap();
        assert_eq!(search["matched"], json!(["WARD_CD"]));
        assert!(
            s.answer("parse_columns", &args(json!({"source": " "})))
                .is_err()
        );
        assert!(
            s.answer("classify_domain_group", &args(json!({"terms": []})))
                .is_err()
        );
        assert!(
            s.answer(
                "lookup_abbreviation",
                &args(json!({"terms": ["a"], "x": 1}))
            )
            .is_err()
        );
        assert!(s.answer("nope", &JsonObject::new()).is_err());
    }
}
