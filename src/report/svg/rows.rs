//! The picture's rows: each job row (its label, its members' bars split into images, its
//! duration and status) and each summary row of what was folded, then the note of what has no
//! bar ([`Plot`]'s last steps of drawing).

use std::fmt::Write as _;

use super::*;

impl Plot<'_> {
    /// The drawn rows: zebra stripes, tree guides, then each job row (label, its members'
    /// bars with their images, duration) or summary row.
    pub(super) fn process_rows(&self, s: &mut String) {
        let (units, drawn, rows_top) = (&self.units, &self.drawn, self.y.rows_top);
        let mut line_of = vec![usize::MAX; units.len()];
        for (k, &u) in drawn.iter().enumerate() {
            line_of[u] = k;
        }
        let indent = |depth: usize| MARGIN + depth.min(MAX_INDENT_LEVEL) as f64 * INDENT;
        s.push_str("<g class=\"rows\">\n");
        for (k, _) in drawn.iter().enumerate().filter(|(k, _)| k % 2 == 1) {
            let _ = writeln!(
                s,
                r#"<rect class="zebra" x="0" y="{}" width="{WIDTH}" height="{ROW_H}"/>"#,
                f1(rows_top + k as f64 * ROW_H)
            );
        }
        // Tree guides: from under the parent row's label down to the child row.
        for &u in drawn {
            let Some(p) = units[u].1 else { continue };
            let (pk, ck) = (line_of[p], line_of[u]);
            if pk == usize::MAX {
                continue;
            }
            let x = indent(units[p].2) + 3.0;
            let x_end = indent(units[u].2) - 2.0;
            if x_end <= x {
                continue;
            }
            let _ = writeln!(
                s,
                r#"<path class="guide" d="M{} {}V{}H{}"/>"#,
                f1(x),
                f1(rows_top + pk as f64 * ROW_H + ROW_H - 2.0),
                f1(rows_top + ck as f64 * ROW_H + ROW_H / 2.0),
                f1(x_end)
            );
        }
        for (k, &u) in drawn.iter().enumerate() {
            let (unit, _, depth) = units[u];
            let y = rows_top + k as f64 * ROW_H;
            match unit {
                Unit::Job(j) => self.job_row(s, j, y, indent(depth)),
                Unit::Fold(j) => self.fold_row(s, j, y, indent(depth)),
            }
        }
        s.push_str("</g>\n");
    }

    /// One job's row at `y`, its label starting at `lx`: the label names its work (the chain
    /// from the head in its hover text); each member with a bar is drawn over the members above
    /// it, drivers (members with members under them) lighter, each split into its images.
    pub(super) fn job_row(&self, s: &mut String, j: usize, y: f64, lx: f64) {
        let job = &self.jobs.jobs[j];
        let head = job.members[0];
        let (Some(hr), Some(wr)) = (self.t.get(self.rows[head].id), self.t.get(self.rows[job.work].id))
        else {
            return;
        };
        let base = y + ROW_H - 4.0;
        let bar_y = y + (ROW_H - BAR_H) / 2.0;
        let pid = wr.pid.to_string();
        let room = ((LABEL_W + MARGIN - lx) / CHAR_W) as usize;
        let desc = fit(
            &short_command_line(wr, self.o.redact),
            room.saturating_sub(pid.len() + 1),
        );
        // The chain from the head to the work, for the label's hover text.
        let mut chain = Vec::new();
        let mut at = Some(job.work);
        while let Some(i) = at {
            chain.push(i);
            if i == head {
                break;
            }
            at = self.rows[i].parent;
        }
        chain.reverse();
        // A long chain by its two ends.
        const ENDS: usize = 6;
        let skipped = chain.len().saturating_sub(2 * ENDS);
        if skipped > 0 {
            chain.drain(ENDS..chain.len() - ENDS);
        }
        let mut chain_text = String::new();
        for (k, &i) in chain.iter().enumerate() {
            if skipped > 0 && k == ENDS {
                let _ = write!(chain_text, " → … {skipped} more");
            }
            if let Some(r) = self.t.get(self.rows[i].id) {
                for im in images(self.t, r) {
                    if !chain_text.is_empty() {
                        chain_text.push_str(" → ");
                    }
                    chain_text.push_str(&image_program(&im));
                }
            }
        }
        let members = job.members.iter().filter(|&&m| self.has_bar[m]).count();
        let _ = write!(
            chain_text,
            "\n{}\n{} process{} in this row",
            command_line(wr, self.o.redact),
            job.members.len(),
            if job.members.len() == 1 { "" } else { "es" }
        );
        if members < job.members.len() {
            let _ = write!(
                chain_text,
                " ({} not drawn: under 1 ms, or past the row's {BARS_PER_ROW} bars)",
                job.members.len() - members
            );
        }
        // What was folded under it, when too little for a summary row: ticks under its bars.
        let inline = self.jobs.folds[j]
            .as_ref()
            .filter(|f| f.processes < jobs::FOLD_ROW_MIN);
        if let Some(f) = inline {
            let _ = write!(
                chain_text,
                "\n{} more under it folded (short or handled), drawn as ticks",
                f.processes
            );
        }
        let _ = writeln!(
            s,
            r#"<g class="job" data-pid="{}" data-members="{}"><text class="mono" x="{}" y="{}"><title>{}</title><tspan class="dim">{pid}</tspan> {}</text>"#,
            hr.pid,
            job.members.len(),
            f1(lx),
            f1(base),
            xml_escape(&chain_text),
            xml_escape(&desc)
        );
        if let Some(f) = inline {
            self.fold_ticks(s, f, bar_y + BAR_H, 2.0);
        }
        // Drivers: members with members under them.
        let drivers: HashSet<usize> = job
            .members
            .iter()
            .skip(1)
            .filter_map(|&c| self.rows[c].parent)
            .collect();
        for &m in &job.members {
            if !self.has_bar[m] {
                continue;
            }
            let row = &self.rows[m];
            let Some(r) = self.t.get(row.id) else { continue };
            self.member_bar(s, r, row, bar_y, drivers.contains(&m));
        }
        // How it ended, printed on the row when it did not end well: a PNG saved from CI has no
        // hover and no colour legend to go by. The head's end, then the row's cause when that
        // is another member (the cc1 under a failed gcc).
        let row = &self.rows[head];
        let oc = Outcome::in_run(hr, row.id, &self.failures);
        let mut dur = match hr.exit {
            Some(x) if oc != Outcome::Ok => format!(
                "{} · {}",
                run_text(hr, row),
                exit_text(x.status, Paint { on: false })
            ),
            Some(_) => run_text(hr, row),
            None => "running".to_string(),
        };
        for &m in job.members.iter().skip(1) {
            let id = self.rows[m].id;
            if self.failures.is_cause(self.t, id)
                && let Some(r) = self.t.get(id)
            {
                let _ = write!(
                    dur,
                    " · cause: {} {}",
                    program(r),
                    exit_text(r.exit.and_then(|x| x.status), Paint { on: false })
                );
            }
        }
        let x = self.x_of(row.start);
        let w = (self.x_of(row.end) - x).max(MIN_BAR_W);
        // Beside the bar; inside its end when the picture's edge would cut it (DejaVu Sans at
        // 10 px is under 6 px a character).
        let room = WIDTH - (x + w + 4.0);
        let wide = dur.chars().count() as f64 * 6.0;
        if wide > room && w > wide + 8.0 {
            let _ = writeln!(
                s,
                r#"<text class="dur" x="{}" y="{}" text-anchor="end" style="fill:#fff">{}</text>"#,
                f1(x + w - 4.0),
                f1(base - 0.5),
                xml_escape(&dur)
            );
        } else {
            let _ = writeln!(
                s,
                r#"<text class="dur" x="{}" y="{}">{}</text>"#,
                f1(x + w + 4.0),
                f1(base - 0.5),
                xml_escape(&dur)
            );
        }
        s.push_str("</g>\n");
    }

    /// One member's bar (its hover text and regions), split into its images: a lighter
    /// segment for a fork image that stood on its own, a mark at each exec after the first
    /// image, each image's program written in it when it fits.
    pub(super) fn member_bar(&self, s: &mut String, r: &ProcessRecord, row: &Proc, bar_y: f64, driver: bool) {
        let oc = Outcome::in_run(r, row.id, &self.failures);
        let x = self.x_of(row.start);
        let w = (self.x_of(row.end) - x).max(MIN_BAR_W);
        let _ = writeln!(
            s,
            r#"<rect class="bar {}" x="{}" y="{}" width="{}" height="{BAR_H}" data-pid="{}"{}><title>{}</title></rect>"#,
            oc.class(),
            f1(x),
            f1(bar_y),
            f1(w),
            r.pid,
            if driver { r#" fill-opacity=".45""# } else { "" },
            xml_escape(&hover(r, row, self.t0, self.o.redact))
        );
        regions(s, r, row, bar_y, self.t0, &|ts| self.x_of(ts));
        let ims = images(self.t, r);
        let many = ims.total() > 1;
        for im in ims {
            let a = im.start_ns.unwrap_or(row.start).clamp(row.start, row.end);
            let b = im.end_ns.unwrap_or(row.end).clamp(a, row.end);
            let (ax, bx) = (self.x_of(a), self.x_of(b));
            if many {
                let mut title = image_command_line(&im, self.o.redact);
                let _ = write!(
                    title,
                    "\n{} of pid {}: +{}, ran {}",
                    if im.is_fork() { "fork image" } else { "exec image" },
                    r.pid,
                    fmt_duration(a.saturating_sub(self.t0)),
                    fmt_duration(b - a)
                );
                let _ = writeln!(
                    s,
                    r#"<rect class="seg{}" x="{}" y="{}" width="{}" height="{BAR_H}" data-pid="{}" data-image="{}"><title>{}</title></rect>"#,
                    if im.is_fork() { " forkimg" } else { "" },
                    f1(ax),
                    f1(bar_y),
                    f1((bx - ax).max(MIN_BAR_W)),
                    r.pid,
                    im.index,
                    xml_escape(&title)
                );
                if im.index > 0 {
                    let ex = f1(ax);
                    let _ = writeln!(
                        s,
                        r#"<line class="exec" x1="{ex}" y1="{}" x2="{ex}" y2="{}"/>"#,
                        f1(bar_y - 1.5),
                        f1(bar_y + BAR_H + 1.5)
                    );
                }
            }
            if driver && !many {
                continue;
            }
            // The image's program, inside its segment when it fits (DejaVu Sans 9 px: under
            // 5.5 px a character).
            let name = image_program(&im);
            let wide = name.chars().count() as f64 * 5.5 + 6.0;
            if bx - ax >= wide {
                let _ = writeln!(
                    s,
                    r#"<text class="seglabel" x="{}" y="{}">{}</text>"#,
                    f1(ax + 3.0),
                    f1(bar_y + BAR_H - 2.5),
                    xml_escape(&name)
                );
            }
        }
    }

    /// What was folded under job `j`, as one row at `y`: how many, why, and a tick where each
    /// began (one a pixel column).
    pub(super) fn fold_row(&self, s: &mut String, j: usize, y: f64, lx: f64) {
        let Some(f) = self.jobs.folds[j].as_ref() else {
            return;
        };
        let base = y + ROW_H - 4.0;
        let mut what = Vec::new();
        if f.short > 0 {
            what.push(format!("{} short (<{})", f.short, fmt_duration(self.short_ns)));
        }
        if f.handled > 0 {
            what.push(format!("{} handled exit ≠ 0", f.handled));
        }
        let parent = self
            .t
            .get(self.rows[self.jobs.jobs[j].work].id)
            .map(program)
            .unwrap_or_default();
        let label = format!(
            "{} process{} under {parent}: {}",
            f.processes,
            if f.processes == 1 { "" } else { "es" },
            what.join(" · ")
        );
        let room = ((LABEL_W + MARGIN - lx) / CHAR_W) as usize;
        let _ = writeln!(
            s,
            r#"<g class="fold" data-count="{}" data-short="{}" data-handled="{}"><text class="mono dim" x="{}" y="{}"><title>{}</title>{}</text>"#,
            f.processes,
            f.short,
            f.handled,
            f1(lx),
            f1(base),
            xml_escape(&format!(
                "{label}\nfolded: rows whose head ran under {} (4 px), or exited non-zero and was handled (nothing that mattered to the command's failure); the longest ran {}",
                fmt_duration(self.short_ns),
                fmt_duration(f.longest)
            )),
            xml_escape(&cut(&label, room))
        );
        self.fold_ticks(s, f, y + 3.0, ROW_H - 6.0);
        s.push_str("</g>\n");
    }

    /// A tick `h` px tall from `top` where each folded row began, one a pixel column.
    pub(super) fn fold_ticks(&self, s: &mut String, f: &jobs::Fold, top: f64, h: f64) {
        let mut cols: Vec<u32> = f.starts.iter().map(|&t| self.x_of(t) as u32).collect();
        cols.sort_unstable();
        cols.dedup();
        let mut d = String::new();
        for c in cols {
            let _ = write!(d, "M{c}.5 {}v{}", f1(top), h);
        }
        if !d.is_empty() {
            let _ = writeln!(s, r#"<path class="foldtick" d="{d}"/>"#);
        }
    }

    /// How many processes have no bar: in summary rows, in rows over the cap (with the longest
    /// of those), or under 1 ms in a drawn row.
    pub(super) fn folded_note(&self, s: &mut String) {
        let folded = self.folded;
        if folded > 0 {
            let _ = write!(
                s,
                r#"<text class="sub" id="folded" data-count="{folded}" data-capped="{}" x="{PLOT_X}" y="{}">"#,
                self.capped, self.y.note_y,
            );
            if self.capped > 0 {
                let _ = write!(
                    s,
                    "… {} more row{} not drawn (none longer than {}); ",
                    self.capped,
                    if self.capped == 1 { "" } else { "s" },
                    xml_escape(&fmt_duration(self.folded_max))
                );
            }
            let _ = writeln!(
                s,
                "{folded} process{} without a bar of {}; the strip above counts every process</text>",
                if folded == 1 { "" } else { "es" },
                self.rows.len()
            );
        }
    }
}
