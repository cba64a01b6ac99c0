//! `parse_columns`: the column names a piece of SQL or Python (pandas,
//! SQLAlchemy) code uses, in the order they first appear, each with where
//! it was used. A tokenizer and a few rules, not a full parser: SQL
//! keywords, functions, tables and aliases are not columns; in Python, the
//! string keys of DataFrame subscripts, the column arguments of pandas
//! calls, ORM column attributes and the columns of SQL held in strings are.

use serde_json::{Value, json};

/// The language of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Language {
    Sql,
    Python,
}

impl Language {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Sql => "sql",
            Self::Python => "python",
        }
    }

    /// SQL if the first word (after comments) starts a statement, else Python.
    pub(crate) fn detect(source: &str) -> Self {
        let first = sql_tokens(source)
            .into_iter()
            .find_map(|t| match t {
                Tok::Ident {
                    text,
                    quoted: false,
                } => Some(text.to_ascii_uppercase()),
                _ => None,
            })
            .unwrap_or_default();
        if SQL_STARTS.contains(&first.as_str()) {
            Self::Sql
        } else {
            Self::Python
        }
    }
}

const SQL_STARTS: [&str; 9] = [
    "SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "CREATE", "ALTER", "MERGE", "EXPLAIN",
];

/// The columns found, in order of first appearance, with their uses.
#[derive(Debug, Default)]
pub(crate) struct Columns {
    found: Vec<(String, Vec<&'static str>)>,
    tables: Vec<String>,
}

impl Columns {
    fn add(&mut self, name: &str, used: &'static str) {
        let name = name.trim();
        if name.is_empty() || name == "*" {
            return;
        }
        match self
            .found
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
        {
            Some((_, uses)) => {
                if !uses.contains(&used) {
                    uses.push(used);
                }
            }
            None => self.found.push((name.to_owned(), vec![used])),
        }
    }

    fn add_table(&mut self, name: &str) {
        if !self.tables.iter().any(|t| t.eq_ignore_ascii_case(name)) {
            self.tables.push(name.to_owned());
        }
    }

    /// The names alone.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.found.iter().map(|(n, _)| n.as_str()).collect()
    }

    pub(crate) fn to_json(&self, language: Language) -> Value {
        json!({
            "language": language.name(),
            "columns": self.names(),
            "details": self.found.iter().map(|(n, u)| json!({"name": n, "uses": u})).collect::<Vec<_>>(),
            "tables": self.tables,
        })
    }
}

/// The columns of `source`, read as `language`.
pub(crate) fn parse(source: &str, language: Language) -> Columns {
    let mut columns = Columns::default();
    match language {
        Language::Sql => sql_columns(source, &mut columns),
        Language::Python => python_columns(source, &mut columns),
    }
    columns
}

// ---------------------------------------------------------------- SQL

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident { text: String, quoted: bool },
    Str,
    Num,
    Punct(String),
}

impl Tok {
    fn is(&self, p: &str) -> bool {
        matches!(self, Self::Punct(s) if s == p)
    }

    fn keyword(&self) -> Option<String> {
        match self {
            Self::Ident {
                text,
                quoted: false,
            } => {
                let upper = text.to_ascii_uppercase();
                KEYWORDS.contains(&upper.as_str()).then_some(upper)
            }
            _ => None,
        }
    }

    /// A name that is not a keyword (quoted names never are).
    fn name(&self) -> Option<&str> {
        match self {
            Self::Ident { text, .. } if self.keyword().is_none() => Some(text),
            _ => None,
        }
    }

    /// Ends an operand: a name, a literal or a closing parenthesis.
    fn ends_operand(&self) -> bool {
        self.name().is_some() || matches!(self, Self::Str | Self::Num) || self.is(")")
    }
}

/// Reserved words and type names: never columns when unquoted.
const KEYWORDS: &[&str] = &[
    "ADD",
    "ALL",
    "ALTER",
    "AND",
    "ANY",
    "AS",
    "ASC",
    "BETWEEN",
    "BIGINT",
    "BOOLEAN",
    "BY",
    "CASCADE",
    "CASE",
    "CAST",
    "CHAR",
    "CHARACTER",
    "CHECK",
    "CLOB",
    "COLLATE",
    "COLUMN",
    "CONSTRAINT",
    "CREATE",
    "CROSS",
    "CURRENT_DATE",
    "CURRENT_TIMESTAMP",
    "DATE",
    "DATETIME",
    "DECIMAL",
    "DEFAULT",
    "DELETE",
    "DESC",
    "DISTINCT",
    "DOUBLE",
    "DROP",
    "ELSE",
    "END",
    "EXCEPT",
    "EXISTS",
    "EXPLAIN",
    "FALSE",
    "FETCH",
    "FIRST",
    "FLOAT",
    "FOR",
    "FOREIGN",
    "FROM",
    "FULL",
    "GROUP",
    "HAVING",
    "IF",
    "ILIKE",
    "IN",
    "INDEX",
    "INNER",
    "INSERT",
    "INT",
    "INTEGER",
    "INTERSECT",
    "INTERVAL",
    "INTO",
    "IS",
    "JOIN",
    "KEY",
    "LAST",
    "LATERAL",
    "LEFT",
    "LIKE",
    "LIMIT",
    "MERGE",
    "NATURAL",
    "NCHAR",
    "NEXT",
    "NOT",
    "NULL",
    "NULLS",
    "NUMBER",
    "NUMERIC",
    "NVARCHAR",
    "OFFSET",
    "ON",
    "ONLY",
    "OR",
    "ORDER",
    "OUTER",
    "OVER",
    "PARTITION",
    "PRECISION",
    "PRIMARY",
    "REAL",
    "RECURSIVE",
    "REFERENCES",
    "REPLACE",
    "RETURNING",
    "RIGHT",
    "ROW",
    "ROWS",
    "SELECT",
    "SERIAL",
    "SET",
    "SMALLINT",
    "TABLE",
    "TEMP",
    "TEMPORARY",
    "TEXT",
    "THEN",
    "TIME",
    "TIMESTAMP",
    "TO",
    "TOP",
    "TRUE",
    "UNION",
    "UNIQUE",
    "UNKNOWN",
    "UPDATE",
    "USING",
    "VALUES",
    "VARCHAR",
    "VARCHAR2",
    "VIEW",
    "WHEN",
    "WHERE",
    "WINDOW",
    "WITH",
    "WITHIN",
    "ZONE",
];

fn sql_tokens(source: &str) -> Vec<Tok> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let n = chars.len();
    while i < n {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c.is_whitespace() {
            i += 1;
        } else if c == '-' && next == Some('-') || c == '#' {
            while i < n && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < n && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if c == '\'' {
            i += 1;
            while i < n {
                if chars[i] == '\'' {
                    if chars.get(i + 1) == Some(&'\'') {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            i += 1;
            out.push(Tok::Str);
        } else if c == '"' || c == '`' || c == '[' {
            let close = match c {
                '[' => ']',
                other => other,
            };
            let start = i + 1;
            i = start;
            while i < n && chars[i] != close {
                i += 1;
            }
            let text: String = chars[start..i.min(n)].iter().collect();
            i += 1;
            out.push(Tok::Ident { text, quoted: true });
        } else if c.is_ascii_digit() {
            while i < n && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            out.push(Tok::Num);
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < n && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$') {
                i += 1;
            }
            out.push(Tok::Ident {
                text: chars[start..i].iter().collect(),
                quoted: false,
            });
        } else if (c == ':' || c == '@') && next.is_some_and(|x| x.is_alphabetic() || x == '_') {
            // A bind parameter (:name, @name): not a column.
            i += 1;
            while i < n && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else {
            let two: String = chars[i..(i + 2).min(n)].iter().collect();
            if [">=", "<=", "<>", "!=", "||", "::"].contains(&two.as_str()) {
                out.push(Tok::Punct(two));
                i += 2;
            } else {
                out.push(Tok::Punct(c.to_string()));
                i += 1;
            }
        }
    }
    out
}

/// Where the walk is in a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clause {
    Select,
    From,
    Where,
    Join,
    GroupBy,
    Having,
    OrderBy,
    Set,
    InsertColumns,
    IndexColumns,
    Values,
    CreateColumns,
    Other,
}

impl Clause {
    fn used(self) -> &'static str {
        match self {
            Self::Select => "select",
            Self::Where => "where",
            Self::Join => "join",
            Self::GroupBy => "group_by",
            Self::Having => "having",
            Self::OrderBy => "order_by",
            Self::Set => "set",
            Self::InsertColumns => "insert",
            Self::IndexColumns => "index",
            Self::CreateColumns => "create",
            Self::From | Self::Values | Self::Other => "other",
        }
    }
}

/// What the next name is, when the grammar says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Nothing,
    /// A table (after FROM, JOIN, INTO, UPDATE, TABLE).
    Table,
    /// An alias of a table or an expression (after AS, or after a table).
    Alias,
    /// The name of a common table expression (after WITH).
    Cte,
}

fn sql_columns(source: &str, columns: &mut Columns) {
    let toks = sql_tokens(source);
    let mut clause = Clause::Other;
    let mut expect = Expect::Nothing;
    // Clause and depth-1 element state saved at each parenthesis.
    let mut stack: Vec<(Clause, Expect)> = Vec::new();
    // In CREATE TABLE's column list: the element has named its column.
    let mut element_named = false;
    let mut create_depth: Option<usize> = None;
    // After INSERT INTO t or CREATE INDEX i ON t: the column list to come.
    let mut list_pending: Option<Clause> = None;
    let mut create_pending = false;
    let mut in_with = false;
    let mut aliases: Vec<String> = Vec::new();
    for (i, tok) in toks.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|p| toks.get(p));
        let next = toks.get(i + 1);
        if tok.is("(") {
            stack.push((clause, expect));
            if create_pending {
                create_pending = false;
                create_depth = Some(stack.len());
                clause = Clause::CreateColumns;
                element_named = false;
            } else if let Some(list) = list_pending.take() {
                clause = list;
            } else if expect == Expect::Cte || expect == Expect::Alias {
                // WITH x AS ( … ): the CTE's query.
                clause = Clause::Other;
            }
            expect = Expect::Nothing;
            continue;
        }
        if tok.is(")") {
            if create_depth == Some(stack.len()) {
                create_depth = None;
            }
            if let Some((c, _)) = stack.pop() {
                clause = c;
            }
            list_pending = None;
            expect = if clause == Clause::From {
                Expect::Alias
            } else {
                Expect::Nothing
            };
            continue;
        }
        if tok.is(",") {
            match clause {
                Clause::From => expect = Expect::Table,
                Clause::CreateColumns if create_depth == Some(stack.len()) => {
                    element_named = false;
                }
                _ => {}
            }
            if expect == Expect::Alias {
                expect = Expect::Nothing;
            }
            if prev.is_some_and(|p| p.keyword().as_deref() == Some("AS")) {
                expect = Expect::Nothing;
            }
            if clause == Clause::Other && stack.is_empty() && in_with {
                // WITH a AS (…), b AS (…)
                expect = Expect::Cte;
            }
            continue;
        }
        if let Some(kw) = tok.keyword() {
            let next_kw = next.and_then(Tok::keyword);
            match kw.as_str() {
                "SELECT" => {
                    clause = Clause::Select;
                    expect = Expect::Nothing;
                    list_pending = None;
                    if stack.is_empty() {
                        in_with = false;
                    }
                }
                "FROM" => {
                    clause = Clause::From;
                    expect = Expect::Table;
                }
                "JOIN" => {
                    clause = Clause::From;
                    expect = Expect::Table;
                }
                "ON" | "USING" if clause == Clause::From => {
                    clause = Clause::Join;
                    expect = Expect::Nothing;
                }
                "WHERE" => {
                    clause = Clause::Where;
                    expect = Expect::Nothing;
                }
                "GROUP" if next_kw.as_deref() == Some("BY") => clause = Clause::GroupBy,
                "ORDER" if next_kw.as_deref() == Some("BY") => clause = Clause::OrderBy,
                "PARTITION" if next_kw.as_deref() == Some("BY") => {}
                "HAVING" => clause = Clause::Having,
                "INTO" => {
                    expect = Expect::Table;
                    list_pending = Some(Clause::InsertColumns);
                }
                "INDEX" => {
                    // CREATE INDEX name ON table (columns)
                    expect = Expect::Alias;
                    list_pending = Some(Clause::IndexColumns);
                }
                "ON" if list_pending == Some(Clause::IndexColumns) => expect = Expect::Table,
                "UPDATE" => {
                    expect = Expect::Table;
                    clause = Clause::Other;
                }
                "SET" => {
                    clause = Clause::Set;
                    expect = Expect::Nothing;
                }
                "VALUES" => {
                    clause = Clause::Values;
                    list_pending = None;
                }
                "TABLE" | "VIEW" => {
                    expect = Expect::Table;
                    if prev.and_then(Tok::keyword).as_deref() != Some("DROP") {
                        create_pending = true;
                    }
                }
                "WITH" => {
                    expect = Expect::Cte;
                    clause = Clause::Other;
                    in_with = true;
                }
                "AS" if expect != Expect::Cte => expect = Expect::Alias,
                "UNION" | "EXCEPT" | "INTERSECT" => clause = Clause::Other,
                "CONSTRAINT" | "PRIMARY" | "FOREIGN" | "UNIQUE" | "CHECK"
                    if clause == Clause::CreateColumns && !element_named =>
                {
                    element_named = true;
                }
                "LIMIT" | "OFFSET" | "FETCH" => clause = Clause::Other,
                _ => {}
            }
            continue;
        }
        let Some(name) = tok.name() else {
            continue;
        };
        // A qualifier (t.col, schema.table): the part before the dot.
        if next.is_some_and(|t| t.is(".")) {
            continue;
        }
        let qualified = prev.is_some_and(|p| p.is("."));
        // A function call.
        if !qualified && next.is_some_and(|t| t.is("(")) && expect != Expect::Table {
            continue;
        }
        match expect {
            Expect::Table => {
                // A CTE named in FROM is not a table.
                if !aliases.iter().any(|a| a.eq_ignore_ascii_case(name)) {
                    columns.add_table(name);
                }
                expect = if list_pending.is_some() || create_pending {
                    Expect::Nothing
                } else {
                    Expect::Alias
                };
                continue;
            }
            Expect::Alias => {
                aliases.push(name.to_owned());
                expect = Expect::Nothing;
                continue;
            }
            Expect::Cte => {
                aliases.push(name.to_owned());
                expect = Expect::Nothing;
                continue;
            }
            Expect::Nothing => {}
        }
        if list_pending.is_some() || create_pending {
            continue;
        }
        // An implicit alias: `expr name` in a select list.
        if clause == Clause::Select && !qualified && prev.is_some_and(Tok::ends_operand) {
            continue;
        }
        match clause {
            Clause::CreateColumns => {
                if create_depth == Some(stack.len()) && !element_named {
                    element_named = true;
                    columns.add(name, clause.used());
                }
            }
            Clause::From | Clause::Values => {}
            _ => {
                if qualified || !aliases.iter().any(|a| a.eq_ignore_ascii_case(name)) {
                    columns.add(name, clause.used());
                }
            }
        }
    }
}

// ------------------------------------------------------------- Python

#[derive(Debug, Clone, PartialEq)]
enum Py {
    Name(String),
    Str(String),
    Punct(char),
    Newline,
    Other,
}

fn python_tokens(source: &str) -> Vec<Py> {
    let chars: Vec<char> = source.chars().collect();
    let n = chars.len();
    let mut out = Vec::new();
    let mut i = 0;
    let mut depth = 0usize;
    while i < n {
        let c = chars[i];
        if c == '\n' {
            if depth == 0 {
                out.push(Py::Newline);
            }
            i += 1;
        } else if c.is_whitespace() || c == '\\' {
            i += 1;
        } else if c == '#' {
            while i < n && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '\'' || c == '"' {
            let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
            let (quote_len, start) = if triple { (3, i + 3) } else { (1, i + 1) };
            let mut j = start;
            let mut text = String::new();
            while j < n {
                if chars[j] == '\\' {
                    if let Some(&e) = chars.get(j + 1) {
                        text.push(e);
                    }
                    j += 2;
                    continue;
                }
                if chars[j] == c
                    && (quote_len == 1
                        || (chars.get(j + 1) == Some(&c) && chars.get(j + 2) == Some(&c)))
                {
                    break;
                }
                if quote_len == 1 && chars[j] == '\n' {
                    break;
                }
                text.push(chars[j]);
                j += 1;
            }
            i = j + quote_len;
            out.push(Py::Str(text));
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < n && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // A string prefix: r"…", f'…', b"…", rb'…'.
            let is_prefix = word.len() <= 2
                && word.chars().all(|p| "rRbBuUfF".contains(p))
                && chars.get(i).is_some_and(|q| *q == '\'' || *q == '"');
            if !is_prefix {
                out.push(Py::Name(word));
            }
        } else if c.is_ascii_digit() {
            while i < n && (chars[i].is_ascii_alphanumeric() || chars[i] == '.' || chars[i] == '_')
            {
                i += 1;
            }
            out.push(Py::Other);
        } else {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
            out.push(Py::Punct(c));
            i += 1;
        }
    }
    out
}

/// pandas methods whose arguments name columns, and the keyword arguments
/// that do.
const FRAME_METHODS: &[&str] = &[
    "groupby",
    "sort_values",
    "set_index",
    "drop",
    "dropna",
    "drop_duplicates",
    "rename",
    "merge",
    "join",
    "pivot",
    "pivot_table",
    "melt",
    "agg",
    "aggregate",
    "astype",
    "fillna",
    "filter",
    "reindex",
    "value_counts",
    "nlargest",
    "nsmallest",
    "explode",
    "get",
];
const COLUMN_KWARGS: &[&str] = &[
    "by",
    "on",
    "left_on",
    "right_on",
    "subset",
    "columns",
    "index",
    "values",
    "usecols",
    "parse_dates",
    "id_vars",
    "value_vars",
    "index_col",
    "names",
    "dtype",
    "items",
    "keys",
];
/// What reads a frame: `pd.read_csv(…)` and the like.
const FRAME_SOURCES: &[&str] = &["pd", "pandas", "pl", "polars", "DataFrame", "read_sql"];
/// Attributes of a DataFrame that are not columns.
const FRAME_ATTRIBUTES: &[&str] = &[
    "T", "at", "columns", "dtypes", "empty", "iat", "iloc", "index", "loc", "ndim", "shape",
    "size", "str", "dt", "values", "plot", "style",
];
/// ORM column constructors: `name = Column(…)`.
const ORM_COLUMNS: &[&str] = &["Column", "mapped_column"];

fn is_frame_name(name: &str, frames: &[String]) -> bool {
    frames.iter().any(|f| f == name)
        || name == "df"
        || name.ends_with("_df")
        || name.starts_with("df_")
}

fn python_columns(source: &str, columns: &mut Columns) {
    let toks = python_tokens(source);
    let frames = frame_names(&toks);
    let n = toks.len();
    let mut i = 0;
    while i < n {
        match &toks[i] {
            // SQL in a string (pd.read_sql("SELECT …")).
            Py::Str(s) if Language::detect(s) == Language::Sql => sql_columns(s, columns),
            // name = Column(…) / mapped_column(…) / models.XField(…)
            Py::Name(name)
                if is_assign(&toks, i + 1)
                    && i.checked_sub(1)
                        .is_none_or(|p| matches!(toks[p], Py::Newline | Py::Punct(':' | ';')))
                    && is_orm_column(&toks[i + 2..]) =>
            {
                columns.add(name, "model");
            }
            Py::Punct('[') if i > 0 && subscript_base_is_frame(&toks, i, &frames) => {
                // df["a"], df[["a", "b"]], df.loc[:, "a"]: a string that is
                // a whole element, not part of an expression (df[df["a"] > "x"]).
                let end = closing(&toks, i);
                for k in i + 1..end {
                    if let Py::Str(s) = &toks[k]
                        && matches!(toks[k - 1], Py::Punct('[' | ','))
                        && matches!(toks.get(k + 1), Some(Py::Punct(']' | ',')))
                    {
                        columns.add(s, "subscript");
                    }
                }
            }
            Py::Punct('.') => {
                if let Some(Py::Name(attr)) = toks.get(i + 1) {
                    let called = toks.get(i + 2) == Some(&Py::Punct('('));
                    let root = chain_root(&toks, i);
                    let on_frame = root.is_some_and(|r| is_frame_name(r, &frames));
                    let on_pandas = root.is_some_and(|r| r == "pd" || r == "pandas");
                    if called && (on_frame && FRAME_METHODS.contains(&attr.as_str())) {
                        call_columns(&toks, i + 2, attr, columns, true);
                    } else if called && on_pandas && attr.starts_with("read_") {
                        call_columns(&toks, i + 2, attr, columns, false);
                    } else if called && on_frame && attr == "assign" {
                        for (kw, _) in call_args(&toks, i + 2) {
                            if let Some(kw) = kw {
                                columns.add(&kw, "assign");
                            }
                        }
                    } else if !called
                        && on_frame
                        && i > 0
                        && matches!(&toks[i - 1], Py::Name(r) if is_frame_name(r, &frames))
                        && !FRAME_ATTRIBUTES.contains(&attr.as_str())
                        && !is_assign(&toks, i + 2)
                    {
                        columns.add(attr, "attribute");
                    }
                }
            }
            Py::Name(name) if ORM_COLUMNS.contains(&name.as_str()) => {
                // Column("name", …): the first argument names it.
                if toks.get(i + 1) == Some(&Py::Punct('('))
                    && let Some(Py::Str(s)) = toks.get(i + 2)
                {
                    columns.add(s, "model");
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// Names assigned something that reads or derives a DataFrame, in order.
fn frame_names(toks: &[Py]) -> Vec<String> {
    let mut frames: Vec<String> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let at_start = i == 0 || toks[i - 1] == Py::Newline;
        if at_start
            && let Py::Name(name) = &toks[i]
            && is_assign(toks, i + 1)
        {
            let end = toks[i..]
                .iter()
                .position(|t| *t == Py::Newline)
                .map_or(toks.len(), |p| i + p);
            let derives = toks[i + 2..end].iter().any(|t| match t {
                Py::Name(n) => {
                    FRAME_SOURCES.contains(&n.as_str())
                        || n.starts_with("read_")
                        || is_frame_name(n, &frames)
                }
                _ => false,
            });
            if derives && !frames.contains(name) {
                frames.push(name.clone());
            }
            i = end;
        }
        i += 1;
    }
    frames
}

/// `=` at `k` is an assignment (or a keyword argument), not `==`, `<=`, `!=`.
fn is_assign(toks: &[Py], k: usize) -> bool {
    toks.get(k) == Some(&Py::Punct('='))
        && toks.get(k + 1) != Some(&Py::Punct('='))
        && k.checked_sub(1)
            .and_then(|p| toks.get(p))
            .is_none_or(|p| !matches!(p, Py::Punct('=' | '!' | '<' | '>')))
}

fn is_orm_column(rest: &[Py]) -> bool {
    // Column( / mapped_column( / sa.Column( / db.Column( / models.CharField(
    let mut k = 0;
    while let (Some(Py::Name(_)), Some(Py::Punct('.'))) = (rest.get(k), rest.get(k + 1)) {
        k += 2;
    }
    match (rest.get(k), rest.get(k + 1)) {
        (Some(Py::Name(f)), Some(Py::Punct('('))) => {
            ORM_COLUMNS.contains(&f.as_str()) || (f.ends_with("Field") && k > 0)
        }
        _ => false,
    }
}

/// The index of the bracket closing the one at `open`.
fn closing(toks: &[Py], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t {
            Py::Punct('(' | '[' | '{') => depth += 1,
            Py::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// The index of the bracket opening the one closing at `close`.
fn opening(toks: &[Py], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for k in (0..=close).rev() {
        match toks[k] {
            Py::Punct(')' | ']' | '}') => depth += 1,
            Py::Punct('(' | '[' | '{') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// The first name of the chain ending just before `at`
/// (`recent.groupby("w")["x"]` → `recent`).
fn chain_root(toks: &[Py], at: usize) -> Option<&str> {
    let mut k = at.checked_sub(1)?;
    loop {
        match &toks[k] {
            Py::Punct(')' | ']') => k = opening(toks, k)?.checked_sub(1)?,
            Py::Name(name) => {
                if k >= 1 && toks[k - 1] == Py::Punct('.') {
                    k = k.checked_sub(2)?;
                } else {
                    return Some(name);
                }
            }
            _ => return None,
        }
    }
}

fn subscript_base_is_frame(toks: &[Py], open: usize, frames: &[String]) -> bool {
    // A subscript follows a name or a closing bracket; a list literal does not.
    match &toks[open - 1] {
        Py::Name(_) | Py::Punct(')' | ']') => {}
        _ => return false,
    }
    chain_root(toks, open).is_some_and(|r| is_frame_name(r, frames))
}

/// The arguments of the call opening at `open`: each with its keyword.
fn call_args(toks: &[Py], open: usize) -> Vec<(Option<String>, std::ops::Range<usize>)> {
    let end = closing(toks, open);
    let mut out = Vec::new();
    let mut start = open + 1;
    let mut depth = 0usize;
    let mut k = open + 1;
    while k <= end.min(toks.len().saturating_sub(1)) {
        let at_end = k == end;
        match &toks[k] {
            Py::Punct('(' | '[' | '{') => depth += 1,
            Py::Punct(')' | ']' | '}') if !at_end => depth = depth.saturating_sub(1),
            _ => {}
        }
        if (at_end || (depth == 0 && toks[k] == Py::Punct(','))) && k > start {
            let (kw, from) = match (&toks[start], toks.get(start + 1)) {
                (Py::Name(n), _) if is_assign(toks, start + 1) => (Some(n.clone()), start + 2),
                _ => (None, start),
            };
            out.push((kw, from..k));
            start = k + 1;
        } else if at_end || (depth == 0 && toks[k] == Py::Punct(',')) {
            start = k + 1;
        }
        k += 1;
    }
    out
}

/// The columns a pandas call names: strings in its column arguments
/// (positional ones too when `positional`), and the keys of dicts there
/// (the values too for `rename`, which maps old names to new).
fn call_columns(toks: &[Py], open: usize, method: &str, columns: &mut Columns, positional: bool) {
    let used: &'static str = match method {
        "groupby" => "groupby",
        "sort_values" => "sort",
        "merge" | "join" => "merge",
        "rename" => "rename",
        m if m.starts_with("read_") => "read",
        _ => "argument",
    };
    for (kw, range) in call_args(toks, open) {
        let names_columns = match &kw {
            Some(k) => COLUMN_KWARGS.contains(&k.as_str()),
            None => positional,
        };
        if !names_columns {
            continue;
        }
        let arg = &toks[range];
        let mut k = 0;
        let mut depth_dict = 0usize;
        let mut expecting_key = false;
        while k < arg.len() {
            match &arg[k] {
                Py::Punct('{') => {
                    depth_dict += 1;
                    expecting_key = true;
                }
                Py::Punct('}') => depth_dict = depth_dict.saturating_sub(1),
                Py::Punct(',') if depth_dict > 0 => expecting_key = true,
                Py::Str(s) => {
                    let is_value = depth_dict > 0 && !expecting_key;
                    if !is_value || method == "rename" {
                        columns.add(s, used);
                    }
                    if depth_dict > 0 {
                        expecting_key = false;
                    }
                }
                Py::Punct(':') if depth_dict > 0 => expecting_key = false,
                _ => {
                    if depth_dict > 0 {
                        expecting_key = false;
                    }
                }
            }
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn sql(s: &str) -> Vec<String> {
        parse(s, Language::Sql)
            .names()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    fn py(s: &str) -> Vec<String> {
        parse(s, Language::Python)
            .names()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// Scenario 1's code (examples/minerva/code/admissions.sql).
    const ADMISSIONS: &str = include_str!("../code/admissions.sql");
    /// Scenario 2's code (examples/minerva/code/discharges.py).
    const DISCHARGES: &str = include_str!("../code/discharges.py");

    #[test]
    fn sql_select_gives_columns_not_tables_aliases_functions_or_keywords() {
        assert_eq!(
            sql(ADMISSIONS),
            [
                "admission_id",
                "patient_id",
                "patient_name",
                "admission_date",
                "discharge_date",
                "ward_code",
                "attending_doctor_id",
                "diagnosis_code"
            ]
        );
        let c = parse(ADMISSIONS, Language::Sql);
        assert_eq!(c.tables, ["admissions", "patients"]);
        let uses = |name: &str| {
            c.found
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, u)| u.clone())
                .unwrap()
        };
        assert_eq!(uses("patient_id"), ["select", "join"]);
        assert_eq!(uses("admission_date"), ["select", "where", "order_by"]);
    }

    #[test]
    fn sql_expressions_aliases_and_literals() {
        assert_eq!(
            sql(
                "SELECT COUNT(DISTINCT p.patient_id) AS n, MAX(a.los) max_los, 'x' AS lit, \
                 CAST(a.weight AS DECIMAL(5,1)) w FROM admissions AS a, patients p \
                 WHERE a.ward_code IN ('W1', 'W2') AND a.admit_date BETWEEN :from AND :to \
                 GROUP BY a.ward_code HAVING SUM(a.claim_amount) > 10 ORDER BY 1 DESC"
            ),
            [
                "patient_id",
                "los",
                "weight",
                "ward_code",
                "admit_date",
                "claim_amount"
            ]
        );
    }

    #[test]
    fn sql_ctes_subqueries_comments_and_quoted_names() {
        assert_eq!(
            sql(
                "-- recent stays\nWITH recent AS (SELECT \"patient_id\", admission_date FROM admissions /* all */ \
                 WHERE admission_date > DATE '2026-01-01') \
                 SELECT r.patient_id, (SELECT MAX(x.updated_at) FROM audit x WHERE x.patient_id = r.patient_id) last_change \
                 FROM recent r"
            ),
            ["patient_id", "admission_date", "updated_at"]
        );
    }

    #[test]
    fn sql_insert_update_and_create_table() {
        assert_eq!(
            sql(
                "INSERT INTO admissions (admission_id, patient_id, ward_code) VALUES (1, 'P1', 'W07')"
            ),
            ["admission_id", "patient_id", "ward_code"]
        );
        assert_eq!(
            sql(
                "UPDATE admissions SET discharge_date = CURRENT_DATE, los = 3 WHERE admission_id = 7"
            ),
            ["discharge_date", "los", "admission_id"]
        );
        assert_eq!(
            sql("CREATE INDEX ix_ward ON admissions (ward_code, admission_date DESC)"),
            ["ward_code", "admission_date"]
        );
        assert_eq!(
            sql(
                "CREATE TABLE patients (\n  patient_id VARCHAR(20) NOT NULL PRIMARY KEY,\n  \
                 patient_name VARCHAR(100),\n  birth_date DATE DEFAULT NULL,\n  \
                 CONSTRAINT pk_x UNIQUE (patient_name, birth_date)\n)"
            ),
            ["patient_id", "patient_name", "birth_date"]
        );
    }

    #[test]
    fn python_pandas_subscripts_calls_and_usecols() {
        assert_eq!(
            py(DISCHARGES),
            [
                "pat_idnt_no",
                "discharge_date",
                "ward_code",
                "length_of_stay"
            ]
        );
    }

    #[test]
    fn python_rename_merge_assign_and_attributes() {
        let src = "import pandas as pd\n\
                   stays = pd.read_parquet('stays.parquet', columns=['admission_id', 'ward_code'])\n\
                   stays = stays.rename(columns={'ward_code': 'ward'})\n\
                   both = stays.merge(codes, on='ward', how='left')\n\
                   both = both.assign(is_emergency=both.admission_type == 'E')\n\
                   print(both.admission_type.unique(), both.shape)\n\
                   env = os.environ['HOME']\n\
                   cfg = {'a': 1}\n\
                   x = cfg['a']\n";
        assert_eq!(
            py(src),
            [
                "admission_id",
                "ward_code",
                "ward",
                "is_emergency",
                "admission_type"
            ]
        );
    }

    #[test]
    fn python_orm_models_and_sql_in_strings() {
        let src = "class Patient(Base):\n    __tablename__ = 'patients'\n    \
                   patient_id = Column(String(20), primary_key=True)\n    \
                   birth_date = mapped_column(Date)\n    \
                   zip = sa.Column('zip_code', String(5))\n\n\
                   rows = pd.read_sql(\"\"\"SELECT p.patient_id, p.phone_number\n  FROM patients p\"\"\", conn)\n";
        let django = "class Ward(models.Model):\n    ward_code = models.CharField(max_length=10)\n    \
                      is_active = models.BooleanField(default=True)\n";
        assert_eq!(py(django), ["ward_code", "is_active"]);
        assert_eq!(
            py(src),
            [
                "patient_id",
                "birth_date",
                "zip",
                "zip_code",
                "phone_number"
            ]
        );
    }

    #[test]
    fn the_language_is_detected() {
        assert_eq!(Language::detect(ADMISSIONS), Language::Sql);
        assert_eq!(Language::detect("  -- c\nselect 1"), Language::Sql);
        assert_eq!(Language::detect(DISCHARGES), Language::Python);
        assert!(sql("").is_empty() && py("").is_empty());
    }
}
