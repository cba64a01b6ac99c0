//! The user's input, normalised into a [`Goal`] with its [`Constraints`]
//! (seed 001's `prepare_input`). An empty or meaningless goal is rejected here,
//! before any model is called.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the user asked for, and the limits they set.
///
/// In JSON, `input` is left out when it equals `goal` (the usual case), so
/// a long goal is written once per event rather than twice; reading fills it
/// back in.
#[derive(Debug, Clone, PartialEq, JsonSchema)]
pub struct Goal {
    /// The raw request, exactly as given; when absent, the same as `goal`.
    #[serde(default)]
    pub input: String,
    /// The normalised goal: trimmed, whitespace collapsed.
    pub goal: String,
    /// Audience, length, sections, tools, budgets.
    pub constraints: Constraints,
}

/// The most characters of a goal a report's heading shows.
const TITLE_CHARS: usize = 160;

/// A report's heading for `goal`: the goal itself, or, for a long one (a goal
/// may carry a whole document), its first words up to [`TITLE_CHARS`] and an
/// ellipsis; the full goal stays in the run's `input_prepared` event.
pub fn title(goal: &str) -> std::borrow::Cow<'_, str> {
    let Some((cut, _)) = goal.char_indices().nth(TITLE_CHARS) else {
        return goal.into();
    };
    let head = &goal[..cut];
    let head = head
        .rsplit_once(char::is_whitespace)
        .map_or(head, |(words, _)| words);
    format!("{}…", head.trim_end()).into()
}

/// [`Goal`] as written: `input` only when it differs from `goal`.
#[derive(Serialize, Deserialize)]
struct GoalWire<'a> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<std::borrow::Cow<'a, str>>,
    goal: std::borrow::Cow<'a, str>,
    constraints: std::borrow::Cow<'a, Constraints>,
}

impl Serialize for Goal {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        GoalWire {
            input: (self.input != self.goal).then_some(self.input.as_str().into()),
            goal: self.goal.as_str().into(),
            constraints: std::borrow::Cow::Borrowed(&self.constraints),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Goal {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = GoalWire::deserialize(deserializer)?;
        let goal = wire.goal.into_owned();
        Ok(Goal {
            input: wire.input.map_or_else(|| goal.clone(), |i| i.into_owned()),
            goal,
            constraints: wire.constraints.into_owned(),
        })
    }
}

/// Constraints on a run. Unknown keys are kept in `extra`, so roles can read
/// constraints this crate does not know about.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Constraints {
    /// Who the result is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
    /// Desired length of the result, e.g. "one page" or "300 words".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub length: Option<String>,
    /// Sections the final report must contain.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required_sections: Vec<String>,
    /// Dimensions a comparison must cover.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comparison_dimensions: Vec<String>,
    /// If set, only these tools may appear in a plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Forbid tools with side effects altogether.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub forbid_side_effects: bool,
    /// A deadline, free text (e.g. an ISO date).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// Most steps a plan may hold and a run may dispatch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<usize>,
    /// Most replans a run may make.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_replans: Option<u32>,
    /// Most model tokens (input + output) a run may spend: once reached, no
    /// new step starts and the run writes its report with what it has, its
    /// gaps named (in-flight steps finish first; nothing stops mid-write).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_budget: Option<u64>,
    /// Anything else the caller passed.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Constraints {
    /// The keys a constraints document may use; any other key lands in
    /// [`extra`](Self::extra) (a caller that wants no surprises, like the
    /// CLI, refuses those, since a misspelt key would otherwise be ignored).
    pub const KEYS: [&'static str; 10] = [
        "audience",
        "length",
        "required_sections",
        "comparison_dimensions",
        "allowed_tools",
        "forbid_side_effects",
        "deadline",
        "max_steps",
        "max_replans",
        "token_budget",
    ];
}

/// Why an input was refused before planning.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// Nothing but whitespace.
    #[error("the goal is empty: say what the run should achieve")]
    Empty,
    /// No words at all, only punctuation or symbols.
    #[error("the goal {0:?} has no words in it: say what the run should achieve")]
    Meaningless(String),
    /// A single word: a topic or a keystroke, not a request.
    #[error(
        "the goal {0:?} is a single word, which says neither what to find out nor what to do: ask a question or name the task (e.g. \"compare RAG and fine-tuning on cost\")"
    )]
    OneWord(String),
}

impl Goal {
    /// [`prepare`](Self::prepare) for a person's request: also refuses a
    /// single word (`"asdf"`, `"RAG?"`), which says neither what to find out
    /// nor what to do. Words are counted at Unicode's word boundaries
    /// (UAX #29), so a sentence in a script written without spaces
    /// (Chinese, Japanese) is not taken for one word. Hosts whose goals come
    /// from people ask for it ([`RunConfig::refuse_single_words`](crate::engine::RunConfig)).
    pub fn prepare_request(input: &str, constraints: Constraints) -> Result<Self, InputError> {
        let goal = Self::prepare(input, constraints)?;
        if unicode_segmentation::UnicodeSegmentation::unicode_words(goal.goal.as_str()).count() < 2
        {
            return Err(InputError::OneWord(goal.goal));
        }
        Ok(goal)
    }

    /// Normalises `input` and rejects empty or meaningless goals.
    ///
    /// A goal is meaningless when it has fewer than two letters or digits
    /// (e.g. `"?"`, `"..."`, `"-"`). A single word passes here (a program's
    /// own runs may be named tersely); see [`prepare_request`](Self::prepare_request).
    pub fn prepare(input: &str, constraints: Constraints) -> Result<Self, InputError> {
        let goal = input.split_whitespace().collect::<Vec<_>>().join(" ");
        if goal.is_empty() {
            return Err(InputError::Empty);
        }
        if goal.chars().filter(|c| c.is_alphanumeric()).count() < 2 {
            return Err(InputError::Meaningless(goal));
        }
        Ok(Self {
            input: input.to_owned(),
            goal,
            constraints,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_whitespace_and_keeps_the_raw_input() {
        let g = Goal::prepare(
            "  compare\n RAG   and  fine-tuning ",
            Constraints::default(),
        )
        .unwrap();
        assert_eq!(g.goal, "compare RAG and fine-tuning");
        assert_eq!(g.input, "  compare\n RAG   and  fine-tuning ");
    }

    #[test]
    fn a_goal_is_written_once_when_it_is_its_own_input() {
        let same = Goal::prepare("compare RAG and fine-tuning", Constraints::default()).unwrap();
        let json = serde_json::to_string(&same).unwrap();
        assert_eq!(json.matches("compare RAG").count(), 1, "{json}");
        assert_eq!(serde_json::from_str::<Goal>(&json).unwrap(), same);

        let spaced = Goal::prepare(" compare  RAG ", Constraints::default()).unwrap();
        let json = serde_json::to_value(&spaced).unwrap();
        assert_eq!(json["input"], " compare  RAG ");
        assert_eq!(serde_json::from_value::<Goal>(json).unwrap(), spaced);
    }

    #[test]
    fn a_long_goal_is_cut_at_a_word_for_its_title() {
        assert_eq!(title("compare RAG"), "compare RAG");
        let long = format!("compare {}", "word ".repeat(100));
        let t = title(&long);
        assert!(t.ends_with("word…"), "{t}");
        assert!(t.chars().count() <= TITLE_CHARS + 1);
        let korean = "가".repeat(500);
        assert_eq!(title(&korean).chars().count(), TITLE_CHARS + 1);
    }

    #[test]
    fn rejects_empty_and_meaningless_goals() {
        assert_eq!(
            Goal::prepare(" \n\t", Constraints::default()),
            Err(InputError::Empty)
        );
        assert!(matches!(
            Goal::prepare("?!", Constraints::default()),
            Err(InputError::Meaningless(_))
        ));
        assert!(Goal::prepare("시장 동향", Constraints::default()).is_ok());
    }

    #[test]
    fn a_single_word_is_not_a_goal_but_a_sentence_without_spaces_is() {
        let c = Constraints::default;
        for one in ["asdf", "RAG?", "  compare "] {
            assert!(
                matches!(Goal::prepare_request(one, c()), Err(InputError::OneWord(_))),
                "{one}"
            );
            assert!(Goal::prepare(one, c()).is_ok(), "{one}");
        }
        assert_eq!(Goal::prepare_request(" ", c()), Err(InputError::Empty));
        for goal in [
            "compare RAG",
            "What is RAG?",
            "fine-tuning",
            "成本比较",
            "コストを比較する",
        ] {
            assert!(Goal::prepare_request(goal, c()).is_ok(), "{goal}");
        }
    }

    #[test]
    fn keys_are_every_field() {
        let all = Constraints {
            audience: Some("a".into()),
            length: Some("l".into()),
            required_sections: vec!["s".into()],
            comparison_dimensions: vec!["d".into()],
            allowed_tools: Some(vec![]),
            forbid_side_effects: true,
            deadline: Some("d".into()),
            max_steps: Some(1),
            max_replans: Some(1),
            token_budget: Some(1),
            extra: serde_json::Map::new(),
        };
        let value = serde_json::to_value(&all).unwrap();
        let mut keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut expected = Constraints::KEYS.to_vec();
        keys.sort_unstable();
        expected.sort_unstable();
        assert_eq!(keys, expected);
    }

    #[test]
    fn sections_and_dimensions_are_both_kept() {
        let c: Constraints = serde_json::from_str(
            r#"{"required_sections":["Risks"],"comparison_dimensions":["cost","latency"]}"#,
        )
        .unwrap();
        let goal = Goal::prepare("Compare them", c).unwrap();
        assert_eq!(goal.constraints.required_sections, ["Risks"]);
        assert_eq!(goal.constraints.comparison_dimensions, ["cost", "latency"]);
    }

    #[test]
    fn unknown_constraint_keys_are_kept() {
        let c: Constraints =
            serde_json::from_str(r#"{"audience":"CTO","max_steps":4,"tone":"dry"}"#).unwrap();
        assert_eq!(c.audience.as_deref(), Some("CTO"));
        assert_eq!(c.max_steps, Some(4));
        assert_eq!(c.extra["tone"], "dry");
    }
}
