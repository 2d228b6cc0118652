//! A small page layout on pdf-writer (docs/inspection.md, "The PDF"): US
//! Letter pages, the standard Helvetica and Helvetica-Bold fonts (every PDF
//! reader has them, so no font file is embedded), text encoded as
//! WinAnsiEncoding so that `pdftotext` and a screen reader read it back,
//! lines wrapped on the fonts' own widths, tables whose rows never split
//! across pages, and on every page a running head and "Page n of m".

use pdf_writer::{Content, Finish, Name, Pdf, Rect, Ref, Str, TextStr};

pub const PAGE_WIDTH: f32 = 612.0;
pub const PAGE_HEIGHT: f32 = 792.0;
pub const MARGIN: f32 = 48.0;
const TOP: f32 = PAGE_HEIGHT - 64.0;
const BOTTOM: f32 = 56.0;
pub const TEXT_WIDTH: f32 = PAGE_WIDTH - 2.0 * MARGIN;

const REGULAR: Name = Name(b"F1");
const BOLD: Name = Name(b"F2");

/// Advance widths of Helvetica and Helvetica-Bold for the printable ASCII
/// characters (32 to 126), in thousandths of the font size, from Adobe's
/// core font metrics (AFM). Other characters count as 556, a digit's width.
const HELVETICA: [u16; 95] = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667,
    611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500,
    222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];
const HELVETICA_BOLD: [u16; 95] = [
    278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556,
    556, 556, 556, 556, 556, 556, 556, 333, 333, 584, 584, 584, 611, 975, 722, 722, 722, 722, 667,
    611, 778, 722, 278, 556, 722, 611, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667,
    667, 611, 333, 278, 333, 584, 556, 333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556,
    278, 889, 611, 611, 611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584,
];

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Font {
    Regular,
    Bold,
}

impl Font {
    fn name(self) -> Name<'static> {
        match self {
            Font::Regular => REGULAR,
            Font::Bold => BOLD,
        }
    }
}

/// The WinAnsiEncoding byte of `c`: ASCII and Latin-1 as themselves, the
/// usual typographic marks at their places, anything else `?`.
fn win_ansi(c: char) -> u8 {
    match c {
        ' '..='~' => c as u8,
        '\u{a0}'..='\u{ff}' => c as u32 as u8,
        '\u{2013}' => 0x96,
        '\u{2014}' => 0x97,
        '\u{2018}' => 0x91,
        '\u{2019}' => 0x92,
        '\u{201c}' => 0x93,
        '\u{201d}' => 0x94,
        '\u{2022}' => 0x95,
        '\u{2026}' => 0x85,
        '\u{20ac}' => 0x80,
        '\t' | '\n' | '\r' => b' ',
        _ => b'?',
    }
}

fn encode(text: &str) -> Vec<u8> {
    text.chars().map(win_ansi).collect()
}

/// The width of `text` in points at `size`.
pub fn width(text: &str, font: Font, size: f32) -> f32 {
    let table = match font {
        Font::Regular => &HELVETICA,
        Font::Bold => &HELVETICA_BOLD,
    };
    let units: u32 = text
        .chars()
        .map(|c| match c {
            ' '..='~' => u32::from(table[(c as usize) - 32]),
            _ => 556,
        })
        .sum();
    units as f32 * size / 1000.0
}

/// `text` broken into lines no wider than `max`: at spaces, and inside a
/// word only when the word alone is wider. Line breaks in `text` are kept.
pub fn wrap(text: &str, font: Font, size: f32, max: f32) -> Vec<String> {
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let mut line = String::new();
        for word in paragraph.split(' ').filter(|w| !w.is_empty()) {
            let candidate = if line.is_empty() {
                word.to_owned()
            } else {
                format!("{line} {word}")
            };
            if width(&candidate, font, size) <= max {
                line = candidate;
                continue;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            // A word wider than the line is cut where it must be.
            let mut piece = String::new();
            for c in word.chars() {
                piece.push(c);
                if width(&piece, font, size) > max && piece.chars().count() > 1 {
                    piece.pop();
                    lines.push(std::mem::take(&mut piece));
                    piece.push(c);
                }
            }
            line = piece;
        }
        lines.push(line);
    }
    lines
}

/// A document being laid out, top to bottom.
pub struct Doc {
    pages: Vec<Content>,
    y: f32,
    /// The running head of every page (the I-9's id).
    head: String,
    /// The table header to repeat on a new page, while a table runs.
    repeat: Option<(Vec<f32>, Vec<String>)>,
}

pub const SIZE: f32 = 9.0;
const LEADING: f32 = 11.5;

impl Doc {
    pub fn new(head: String) -> Self {
        let mut doc = Self {
            pages: Vec::new(),
            y: TOP,
            head,
            repeat: None,
        };
        doc.new_page();
        doc
    }

    fn page(&mut self) -> &mut Content {
        // `new` made the first page, and pages are never removed.
        let last = self.pages.len() - 1;
        &mut self.pages[last]
    }

    fn new_page(&mut self) {
        let mut c = Content::new();
        let head = encode(&self.head);
        c.begin_text()
            .set_font(REGULAR, 8.0)
            .next_line(MARGIN, PAGE_HEIGHT - 36.0)
            .show(Str(&head))
            .end_text();
        c.set_line_width(0.5)
            .move_to(MARGIN, PAGE_HEIGHT - 42.0)
            .line_to(PAGE_WIDTH - MARGIN, PAGE_HEIGHT - 42.0)
            .stroke();
        self.pages.push(c);
        self.y = TOP;
        if let Some((widths, header)) = self.repeat.clone() {
            self.row_lines(&widths, &header, Font::Bold, true);
        }
    }

    /// Room for `height` points on this page, or a new page.
    fn need(&mut self, height: f32) {
        if self.y - height < BOTTOM {
            self.new_page();
        }
    }

    fn text_at(&mut self, x: f32, y: f32, text: &str, font: Font, size: f32) {
        let bytes = encode(text);
        self.page()
            .begin_text()
            .set_font(font.name(), size)
            .next_line(x, y)
            .show(Str(&bytes))
            .end_text();
    }

    /// The document's title.
    pub fn title(&mut self, text: &str) {
        for line in wrap(text, Font::Bold, 15.0, TEXT_WIDTH) {
            self.need(19.0);
            self.y -= 15.0;
            self.text_at(MARGIN, self.y, &line, Font::Bold, 15.0);
            self.y -= 4.0;
        }
        self.y -= 4.0;
    }

    /// A section's heading, with a rule under it; kept with the next lines.
    pub fn heading(&mut self, text: &str) {
        self.need(16.0 + 4.0 * LEADING);
        self.y -= 10.0;
        self.y -= 12.0;
        self.text_at(MARGIN, self.y, text, Font::Bold, 12.0);
        self.y -= 4.0;
        let y = self.y;
        self.page()
            .set_line_width(0.75)
            .move_to(MARGIN, y)
            .line_to(PAGE_WIDTH - MARGIN, y)
            .stroke();
        self.y -= 4.0;
    }

    /// A smaller heading inside a section.
    pub fn subheading(&mut self, text: &str) {
        self.need(8.0 + 3.0 * LEADING);
        self.y -= 6.0;
        for line in wrap(text, Font::Bold, 10.0, TEXT_WIDTH) {
            self.y -= LEADING;
            self.text_at(MARGIN, self.y, &line, Font::Bold, 10.0);
        }
        self.y -= 2.0;
    }

    /// Running text, wrapped.
    pub fn paragraph(&mut self, text: &str) {
        for line in wrap(text, Font::Regular, SIZE, TEXT_WIDTH) {
            self.need(LEADING);
            self.y -= LEADING;
            self.text_at(MARGIN, self.y, &line, Font::Regular, SIZE);
        }
        // Room for the descenders before what follows (a table's shading).
        self.y -= 4.0;
    }

    /// Labelled values, two pairs to a row (label above value), as the
    /// boxes of the paper form.
    pub fn fields(&mut self, pairs: &[(&str, String)]) {
        let col = TEXT_WIDTH / 2.0;
        for chunk in pairs.chunks(2) {
            let cells: Vec<(Vec<String>, Vec<String>)> = chunk
                .iter()
                .map(|(label, value)| {
                    (
                        wrap(label, Font::Bold, 7.5, col - 10.0),
                        wrap(value, Font::Regular, SIZE, col - 10.0),
                    )
                })
                .collect();
            let lines = cells
                .iter()
                .map(|(l, v)| l.len() as f32 * 9.0 + v.len() as f32 * LEADING)
                .fold(0.0, f32::max);
            self.need(lines + 4.0);
            let top = self.y;
            for (i, (label, value)) in cells.iter().enumerate() {
                let x = MARGIN + i as f32 * col;
                let mut y = top;
                for l in label {
                    y -= 9.0;
                    self.text_at(x, y, l, Font::Bold, 7.5);
                }
                for v in value {
                    y -= LEADING;
                    self.text_at(x, y, v, Font::Regular, SIZE);
                }
            }
            self.y = top - lines - 4.0;
        }
    }

    /// A table: `widths` in points (summing to at most [`TEXT_WIDTH`]), a
    /// header repeated on each page it runs onto, each row kept on one page.
    pub fn table(&mut self, widths: &[f32], header: &[&str], rows: &[Vec<String>]) {
        let header: Vec<String> = header.iter().map(|h| (*h).to_owned()).collect();
        self.need(3.0 * LEADING + 8.0);
        self.row_lines(widths, &header, Font::Bold, true);
        self.repeat = Some((widths.to_vec(), header));
        for row in rows {
            self.row_lines(widths, row, Font::Regular, false);
        }
        self.repeat = None;
        self.y -= 4.0;
    }

    fn row_lines(&mut self, widths: &[f32], cells: &[String], font: Font, header: bool) {
        let size = if header { 7.5 } else { 8.5 };
        let leading = if header { 9.5 } else { 10.5 };
        let wrapped: Vec<Vec<String>> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| wrap(c, font, size, w - 6.0))
            .collect();
        let lines = wrapped.iter().map(Vec::len).max().unwrap_or(1).max(1);
        let height = lines as f32 * leading + 4.0;
        if self.y - height < BOTTOM {
            // A new page repeats the header of a running table.
            self.new_page();
        }
        let top = self.y;
        if header {
            let y = top - height;
            self.page()
                .set_fill_gray(0.9)
                .rect(MARGIN, y, widths.iter().sum(), height)
                .fill_nonzero()
                .set_fill_gray(0.0);
        }
        let mut x = MARGIN;
        for (cell, w) in wrapped.iter().zip(widths) {
            let mut y = top - 1.0;
            for line in cell {
                y -= leading;
                self.text_at(x + 3.0, y + 2.0, line, font, size);
            }
            x += w;
        }
        self.y = top - height;
        let y = self.y;
        let right = MARGIN + widths.iter().sum::<f32>();
        self.page()
            .set_line_width(0.25)
            .set_stroke_gray(0.6)
            .move_to(MARGIN, y)
            .line_to(right, y)
            .stroke()
            .set_stroke_gray(0.0);
    }

    /// The PDF: the pages with their footers, and how many there are.
    pub fn finish(mut self, title: &str, foot: &str) -> (Vec<u8>, usize) {
        let count = self.pages.len();
        let catalog = Ref::new(1);
        let tree = Ref::new(2);
        let regular = Ref::new(3);
        let bold = Ref::new(4);
        let info = Ref::new(5);
        let first = 6;
        let mut pdf = Pdf::new();
        pdf.catalog(catalog).pages(tree);
        let kids = (0..count).map(|i| Ref::new(first + 2 * i as i32));
        pdf.pages(tree).kids(kids).count(count as i32);
        pdf.type1_font(regular)
            .base_font(Name(b"Helvetica"))
            .encoding_predefined(Name(b"WinAnsiEncoding"));
        pdf.type1_font(bold)
            .base_font(Name(b"Helvetica-Bold"))
            .encoding_predefined(Name(b"WinAnsiEncoding"));
        pdf.document_info(info)
            .title(TextStr(title))
            .producer(TextStr("i9 records service"));
        for (i, mut content) in std::mem::take(&mut self.pages).into_iter().enumerate() {
            let text = encode(&format!("{foot}    Page {} of {count}", i + 1));
            let w = width(
                &format!("{foot}    Page {} of {count}", i + 1),
                Font::Regular,
                8.0,
            );
            content
                .begin_text()
                .set_font(REGULAR, 8.0)
                .next_line(PAGE_WIDTH - MARGIN - w, 30.0)
                .show(Str(&text))
                .end_text();
            let page_id = Ref::new(first + 2 * i as i32);
            let content_id = Ref::new(first + 2 * i as i32 + 1);
            let mut page = pdf.page(page_id);
            page.parent(tree)
                .media_box(Rect::new(0.0, 0.0, PAGE_WIDTH, PAGE_HEIGHT))
                .contents(content_id);
            let mut resources = page.resources();
            resources
                .fonts()
                .pair(REGULAR, regular)
                .pair(BOLD, bold)
                .finish();
            resources.finish();
            page.finish();
            pdf.stream(content_id, &content.finish());
        }
        (pdf.finish(), count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_wrap_at_spaces_and_cut_long_words() {
        let lines = wrap("aaa bbb ccc", Font::Regular, 10.0, 40.0);
        assert_eq!(lines, ["aaa bbb", "ccc"]);
        let long = wrap("xxxxxxxxxxxxxxxxxxxx", Font::Regular, 10.0, 30.0);
        assert!(long.len() > 1);
        assert!(long.iter().all(|l| width(l, Font::Regular, 10.0) <= 30.0));
        assert_eq!(long.concat(), "xxxxxxxxxxxxxxxxxxxx");
        assert_eq!(wrap("", Font::Regular, 10.0, 30.0), [""]);
    }

    #[test]
    fn text_is_win_ansi() {
        assert_eq!(encode("José – ok"), b"Jos\xe9 \x96 ok");
        assert_eq!(encode("\u{4e2d}"), b"?");
    }
}
