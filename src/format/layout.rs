//! Nested brackets, separators, `...` and line wrapping: NumPy's `_formatArray`
//! (numpy/_core/arrayprint.py, non-legacy mode), over already formatted elements.

/// Elements shown on each side of a `...` (NumPy's `edgeitems`).
pub(crate) const EDGE_ITEMS: usize = 3;

/// How the shown elements are laid out.
pub(crate) struct Layout<'a> {
    /// Shape of the elements shown (a summarised axis keeps `2 * EDGE_ITEMS`).
    pub(crate) shape: &'a [usize],
    /// Per axis: elements were left out between the leading and trailing edges.
    pub(crate) cut: &'a [bool],
    /// `" "` for `str`, `", "` for `repr`.
    pub(crate) separator: &'a str,
    /// Maximum line width.
    pub(crate) width: usize,
    /// Indentation of continuation lines: one space per `[`, plus the `array(` prefix.
    pub(crate) next_line_prefix: &'a str,
}

impl Layout<'_> {
    /// The text of all elements; `elem(i)` is the padded text of flat element `i`.
    pub(crate) fn render(&self, elem: &dyn Fn(usize) -> String) -> String {
        self.recurse(elem, &mut Vec::new(), self.next_line_prefix, self.width)
    }

    fn recurse(&self, elem: &dyn Fn(usize) -> String, index: &mut Vec<usize>, hanging: &str, width: usize) -> String {
        let axis = index.len();
        if axis == self.shape.len() {
            let flat = index.iter().zip(self.shape).fold(0, |acc, (&i, &d)| acc * d + i);
            return elem(flat);
        }
        let axes_left = self.shape.len() - axis;
        let next_hanging = format!("{hanging} ");
        // Room for the closing bracket.
        let next_width = width.saturating_sub(1);
        let len = self.shape[axis];
        let lead = if self.cut[axis] { EDGE_ITEMS } else { 0 };
        let mut child = |i: usize| {
            index.push(i);
            let s = self.recurse(elem, index, &next_hanging, next_width);
            index.pop();
            s
        };
        let mut s = String::new();
        if axes_left == 1 {
            let sep = self.separator;
            let elem_width = width.saturating_sub(sep.trim_end().len().max(1));
            let mut line = hanging.to_string();
            for i in 0..len {
                if i == lead && self.cut[axis] {
                    extend_line(&mut s, &mut line, "...", elem_width, hanging);
                    line.push_str(sep);
                }
                extend_line(&mut s, &mut line, &child(i), elem_width, hanging);
                if i + 1 < len {
                    line.push_str(sep);
                }
            }
            s.push_str(&line);
        } else {
            let line_sep = format!("{}{}", self.separator.trim_end(), "\n".repeat(axes_left - 1));
            for i in 0..len {
                if i == lead && self.cut[axis] {
                    s.push_str(hanging);
                    s.push_str("...");
                    s.push_str(&line_sep);
                }
                s.push_str(hanging);
                s.push_str(&child(i));
                if i + 1 < len {
                    s.push_str(&line_sep);
                }
            }
        }
        format!("[{}]", &s[hanging.len()..])
    }
}

/// Appends `word` to `line`, first moving to a new line when it would pass `width`
/// (unless the line holds only its indentation, where wrapping would not help).
fn extend_line(s: &mut String, line: &mut String, word: &str, width: usize, next_line_prefix: &str) {
    if line.len() + word.len() > width && line.len() > next_line_prefix.len() {
        s.push_str(line.trim_end());
        s.push('\n');
        *line = next_line_prefix.to_string();
    }
    line.push_str(word);
}
