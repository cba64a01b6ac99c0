//! Reading a plan's steps out of a model's answer while it streams: the
//! answer is the usual plan JSON (`{"steps": [...]}`, or a bare array of
//! steps, perhaps inside a ``` fence or after a sentence), and each element
//! of its `steps` array is handed on as soon as its closing brace arrives —
//! so the engine can start step 1 while the model still writes step 10. The
//! scanner only tracks strings and nesting; each element is then parsed
//! whole by serde_json. Nothing here decides what the plan is: the whole
//! answer is parsed again at the end, and that is the draft recorded.

use serde_json::Value;
use stepwise_core::roles::StepSender;

use crate::call::TextSink;

/// Finds complete step objects in a streamed plan answer.
#[derive(Debug)]
pub struct StepScanner {
    sender: StepSender,
    /// The current attempt's text so far.
    text: String,
    /// Bytes of `text` already scanned.
    scanned: usize,
    /// Open containers: `true` for an object, `false` for an array.
    open: Vec<bool>,
    in_string: bool,
    escaped: bool,
    /// Where the last string at the root object's level started.
    string_start: usize,
    /// The last string at the root object's level (a key, before `[`).
    last_root_string: String,
    /// Nesting depth inside the steps array, once it is open.
    steps_depth: Option<usize>,
    /// Where the step being read started.
    step_start: Option<usize>,
    /// The steps array closed: the rest of the answer is not read.
    done: bool,
}

impl StepScanner {
    /// A scanner handing each step it reads to `sender`.
    pub fn new(sender: StepSender) -> Self {
        Self {
            sender,
            text: String::new(),
            scanned: 0,
            open: Vec::new(),
            in_string: false,
            escaped: false,
            string_start: 0,
            last_root_string: String::new(),
            steps_depth: None,
            step_start: None,
            done: false,
        }
    }

    fn scan(&mut self) {
        let bytes = self.text.as_bytes();
        let mut found: Vec<(usize, usize)> = Vec::new();
        let mut i = self.scanned;
        while i < bytes.len() && !self.done {
            let b = bytes[i];
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                    if self.open == [true] {
                        self.last_root_string = self.text[self.string_start..i].to_owned();
                    }
                }
                i += 1;
                continue;
            }
            match b {
                b'"' if !self.open.is_empty() => {
                    self.in_string = true;
                    self.string_start = i + 1;
                }
                b'{' | b'[' => {
                    let depth = self.open.len();
                    if b == b'{' && self.steps_depth == Some(depth) {
                        self.step_start = Some(i);
                    }
                    if b == b'[' {
                        let root_array = depth == 0;
                        let steps_key = self.open == [true] && self.last_root_string == "steps";
                        if root_array || steps_key {
                            self.steps_depth = Some(depth + 1);
                        }
                    }
                    self.open.push(b == b'{');
                }
                b'}' | b']' if !self.open.is_empty() => {
                    self.open.pop();
                    let depth = self.open.len();
                    if b == b'}'
                        && self.steps_depth == Some(depth)
                        && let Some(start) = self.step_start.take()
                    {
                        found.push((start, i + 1));
                    }
                    if b == b']' && self.steps_depth == Some(depth + 1) {
                        self.done = true;
                    }
                    if depth == 0 {
                        self.done = true;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.scanned = i;
        for (start, end) in found {
            if let Ok(step @ Value::Object(_)) = serde_json::from_str(&self.text[start..end]) {
                self.sender.send(step);
            }
        }
    }
}

impl TextSink for StepScanner {
    fn restart(&mut self) {
        let sender = self.sender.clone();
        *self = Self::new(sender);
    }

    fn text(&mut self, piece: &str) {
        if self.done {
            return;
        }
        self.text.push_str(piece);
        self.scan();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scan(pieces: &[&str]) -> Vec<Value> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut scanner = StepScanner::new(StepSender::new(tx));
        let mut seen = Vec::new();
        for piece in pieces {
            scanner.text(piece);
            while let Ok(step) = rx.try_recv() {
                seen.push(step);
            }
        }
        seen
    }

    #[test]
    fn each_step_is_handed_on_when_its_brace_closes() {
        let plan = json!({"goal": "steps [ { not a step }", "steps": [
            {"id": "a", "args": {"query": "x } ] \" {"}, "depends_on": []},
            {"id": "b", "depends_on": ["a"], "acceptance_criteria": [{"kind": "non_empty"}]}
        ], "notes": [{"id": "not-a-step"}]})
        .to_string();
        // Fed one byte at a time (pieces split anywhere), in a fence after prose.
        let text = format!("Here is the plan:\n```json\n{plan}\n```");
        let pieces: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        let steps = scan(&refs);
        let ids: Vec<&str> = steps.iter().filter_map(|s| s["id"].as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(steps[0]["args"]["query"], "x } ] \" {");
    }

    #[test]
    fn a_step_is_sent_before_the_next_one_is_written() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut scanner = StepScanner::new(StepSender::new(tx));
        scanner.text("[{\"id\": \"a\"}, {\"id\": ");
        assert_eq!(rx.try_recv().ok(), Some(json!({"id": "a"})));
        assert!(rx.try_recv().is_err(), "b is not complete");
        // A retried attempt streams again from the start.
        scanner.restart();
        scanner.text("{\"steps\": [{\"id\": \"a2\"}]}");
        assert_eq!(rx.try_recv().ok(), Some(json!({"id": "a2"})));
    }

    #[test]
    fn junk_sends_nothing_and_never_panics() {
        assert!(scan(&["no json here ] } {", "\"\\"]).is_empty());
        assert!(scan(&["{\"steps\": {\"id\": \"a\"}}"]).is_empty());
        assert!(
            scan(&["{\"steps\": [{\"id\": \"a\", }]}"]).is_empty(),
            "not JSON"
        );
    }
}
