//! Column tables, as every command prints them: no borders, two spaces
//! between columns, numbers aligned right, no trailing spaces — so a table
//! reads in a terminal and still splits on whitespace in a script. Built on
//! comfy-table (width by Unicode display width, not bytes), never wrapped:
//! a cell that must stay short is clipped by the caller.

use comfy_table::{CellAlignment, ContentArrangement, Table as Inner};

/// Space between two columns.
const GAP: u16 = 2;

/// A table being filled, row by row.
#[derive(Debug)]
pub(crate) struct Table {
    inner: Inner,
    columns: usize,
    right: Vec<usize>,
    indent: usize,
}

impl Table {
    /// A table with a header row.
    pub(crate) fn new(headers: &[&str]) -> Table {
        let mut table = Table::headless(headers.len());
        table.inner.set_header(headers.to_vec());
        table
    }

    /// A table without a header row.
    pub(crate) fn headless(columns: usize) -> Table {
        let mut inner = Inner::new();
        inner
            .load_style(comfy_table::presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled);
        Table {
            inner,
            columns,
            right: Vec::new(),
            indent: 0,
        }
    }

    /// Aligns these columns (0-based) to the right, header included.
    pub(crate) fn right(mut self, columns: &[usize]) -> Table {
        self.right = columns.to_vec();
        self
    }

    /// Indents every line by `n` spaces (a table under a heading).
    pub(crate) fn indent(mut self, n: usize) -> Table {
        self.indent = n;
        self
    }

    /// Adds a row; missing cells are left empty, extra ones ignored.
    pub(crate) fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut row: Vec<String> = cells
            .into_iter()
            .take(self.columns)
            .map(Into::into)
            .collect();
        row.resize(self.columns, String::new());
        self.inner.add_row(row);
    }

    /// Whether no row was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The table, one line per row, each ending in a newline.
    pub(crate) fn render(mut self) -> String {
        let last = self.columns.saturating_sub(1);
        for (i, column) in self.inner.column_iter_mut().enumerate() {
            let left = if i == 0 {
                u16::try_from(self.indent).unwrap_or(u16::MAX)
            } else {
                0
            };
            column.set_padding((left, if i == last { 0 } else { GAP }));
            if self.right.contains(&i) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut text = String::new();
        for line in self.inner.lines() {
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_to_the_widest_cell_and_numbers_aligned_right() {
        let mut table = Table::new(&["NAME", "N", "NOTE"]).right(&[1]);
        table.row(["a", "10", "first"]);
        table.row(["ünïcode", "2", ""]);
        assert_eq!(
            table.render(),
            "NAME      N  NOTE\n\
             a        10  first\n\
             ünïcode   2\n"
        );
    }

    #[test]
    fn a_headless_indented_table() {
        let mut table = Table::headless(2).indent(2);
        assert!(table.is_empty());
        table.row(["step a", "1 call"]);
        table.row(["planner"]);
        assert!(!table.is_empty());
        assert_eq!(table.render(), "  step a   1 call\n  planner\n");
    }
}
