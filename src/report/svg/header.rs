//! The picture's top: the `<svg>` element, the title, the legend, the time axis and the
//! concurrency strip ([`Plot`]'s first steps of drawing).

use std::fmt::Write as _;

use super::*;

impl Plot<'_> {
    /// The `<svg>` element (with the time range and plot geometry as data attributes), the style
    /// and the white background.
    pub(super) fn open(&self, s: &mut String) {
        let (t0, t1, height) = (self.t0, self.t1, self.y.height);
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" viewBox="0 0 {w} {height}" data-t0="{t0}" data-t1="{t1}" data-plot-x="{px}" data-plot-width="{pw}" data-min-bar="{MIN_BAR_W}">"#,
            w = WIDTH,
            px = PLOT_X,
            pw = PLOT_W,
        );
        let _ = writeln!(
            s,
            "<style>{STYLE}{}{}</style>",
            if self.any_handled { HANDLED_STYLE } else { "" },
            if self.any_regions { REGION_STYLE } else { "" }
        );
        let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    }

    /// The command, the line of counts under it (wall time, CPU, processes, failures, losses,
    /// status), and when and how on the right.
    pub(super) fn title(&self, s: &mut String, tally: &Tally) {
        let (h, t, sum) = (self.h, self.t, self.sum);
        let what = match &h.mode {
            Mode::Run { argv } => quote_argv(argv, self.o.redact),
            Mode::Watch { root: Some(r) } => format!("watch -p {r}"),
            Mode::Watch { root: None } => "watch (system-wide)".to_string(),
            Mode::Replay { path } => format!("replay {path}"),
            Mode::Analyze { inputs } => format!("analyze {}", quote_argv(inputs, false)),
        };
        let _ = writeln!(
            s,
            r#"<text class="title" x="{MARGIN}" y="24">{}</text>"#,
            xml_escape(&cut(&what, 96))
        );
        let n = self.rows.len();
        let wall_ns = crate::report::summary::wall(h, t, sum).1;
        let mut sub = format!("wall {} · ", xml_escape(&fmt_duration(wall_ns)));
        // What the whole tree cost, when measured: CPU and the cores it kept busy on average.
        // With some processes unmeasured the sum is a lower bound, and says so.
        let (mut cpu, mut measured) = (0u64, 0usize);
        for r in self.rows.iter().filter_map(|row| t.get(row.id)) {
            if let Some(u) = r.usage.as_deref() {
                cpu = cpu.saturating_add(u.cpu_user_ns.saturating_add(u.cpu_sys_ns));
                measured += 1;
            }
        }
        if measured > 0 {
            let _ = write!(sub, "CPU {}", xml_escape(&fmt_duration(cpu)));
            if wall_ns > 0 {
                let _ = write!(sub, " ({:.1} cores on average)", cpu as f64 / wall_ns as f64);
            }
            if measured < n {
                let _ = write!(sub, " of the {measured} measured");
            }
            sub.push_str(" · ");
        }
        let _ = write!(
            sub,
            "{n} process{} · {} execs · ",
            if n == 1 { "" } else { "es" },
            sum.stats.execs
        );
        let (jobs_max, jobs_avg) = self.jobs_running();
        let _ = write!(sub, "jobs: max {jobs_max}, {jobs_avg:.1} on average · ");
        let failed = tally.failed;
        let _ = write!(
            sub,
            r#"<tspan class="{}">{failed} failed</tspan> · "#,
            if failed > 0 { "warn" } else { "sub" }
        );
        if tally.signalled > 0 {
            let _ = write!(
                sub,
                r#"<tspan class="warn">{} killed by a signal</tspan> · "#,
                tally.signalled
            );
        }
        if tally.handled > 0 {
            let _ = write!(
                sub,
                "{} handled non-zero exit{} · ",
                tally.handled,
                if tally.handled == 1 { "" } else { "s" }
            );
        }
        let _ = write!(sub, "{} background · ", sum.background);
        if sum.stats.lost > 0 || !sum.incomplete() {
            let _ = write!(
                sub,
                r#"<tspan class="{}">{} events lost{}</tspan> · "#,
                if sum.stats.lost > 0 { "loss" } else { "sub" },
                sum.stats.lost,
                if sum.stats.lost > 0 {
                    ": the picture may be incomplete"
                } else {
                    ""
                }
            );
        }
        if sum.capture.untraced > 0 {
            let _ = write!(
                sub,
                r#"<tspan class="loss">{} untraced: the picture is incomplete</tspan> · "#,
                if sum.capture.untraced == 1 {
                    "1 process".to_string()
                } else {
                    format!("{} processes", sum.capture.untraced)
                }
            );
        }
        if let Some(st) = sum.status {
            let _ = write!(
                sub,
                "{} · ",
                xml_escape(&exit_text(Some(st), Paint { on: false }))
            );
        }
        let sub = sub.trim_end_matches(" · ");
        let _ = writeln!(s, r#"<text class="sub" x="{MARGIN}" y="44">{sub}</text>"#);
        // When and how, on the title line's right.
        let mut when = format!("started {}", wall_clock(h, self.t0));
        if let Some(b) = &h.backend {
            let _ = write!(when, " · {b}");
        }
        let _ = writeln!(
            s,
            r#"<text class="sub" x="{}" y="24" text-anchor="end">{}</text>"#,
            WIDTH - MARGIN,
            xml_escape(&when)
        );
    }

    /// The outcomes that occur, always "exit 0" first; the exec mark and the region band when
    /// any is drawn.
    pub(super) fn legend(&self, s: &mut String, tally: &Tally) {
        let legend_y = self.y.legend_y;
        let mut lx = MARGIN;
        for oc in [
            Outcome::Ok,
            Outcome::Failed,
            Outcome::Signalled,
            Outcome::Handled,
            Outcome::Running,
            Outcome::Lost,
        ] {
            if oc != Outcome::Ok && !tally.seen[oc as usize] {
                continue;
            }
            let _ = writeln!(
                s,
                r#"<rect class="{}" x="{}" y="{}" width="14" height="{BAR_H}"/><text x="{}" y="{}">{}</text>"#,
                oc.class(),
                f1(lx),
                legend_y - 10.0,
                f1(lx + 19.0),
                legend_y,
                xml_escape(oc.legend())
            );
            lx += 19.0 + oc.legend().chars().count() as f64 * 6.6 + 16.0;
        }
        if self
            .rows
            .iter()
            .any(|r| self.t.get(r.id).is_some_and(|p| p.execs.len() > 1))
        {
            let _ = writeln!(
                s,
                r#"<line class="exec" x1="{x}" y1="{}" x2="{x}" y2="{}"/><text x="{}" y="{legend_y}">exec (after the first)</text>"#,
                legend_y - 11.0,
                legend_y + 1.0,
                f1(lx + 6.0),
                x = f1(lx + 1.0)
            );
            lx += 6.0 + 22.0 * 6.6 + 16.0;
        }
        if self.any_regions {
            let _ = writeln!(
                s,
                r#"<rect class="ok" x="{}" y="{}" width="24" height="{BAR_H}"/><rect class="region" x="{}" y="{}" width="14" height="{}"/><text x="{}" y="{legend_y}">region the process reported (Trace2), darker when nested</text>"#,
                f1(lx),
                legend_y - 10.0,
                f1(lx + 5.0),
                legend_y - 10.0 + REGION_INSET,
                BAR_H - 2.0 * REGION_INSET,
                f1(lx + 29.0)
            );
        }
    }

    /// The grid lines and the time axis (repeated under the rows when there are many).
    pub(super) fn axis(&self, s: &mut String) {
        let Layout {
            strip_top,
            axis_y,
            rows_bottom,
            bottom_axis_y,
            ..
        } = self.y;
        let span = self.t1 - self.t0;
        let (step, unit, unit_name) = tick_step(span, 90.0);
        let mut ticks = Vec::new();
        let mut tk = 0u64;
        while tk <= span {
            ticks.push(tk);
            tk = match tk.checked_add(step) {
                Some(v) => v,
                None => break,
            };
        }
        s.push_str("<g class=\"axis\">\n");
        for &tk in &ticks {
            let x = f1(self.x_of(self.t0 + tk));
            let _ = writeln!(
                s,
                r#"<line class="grid" x1="{x}" y1="{strip_top}" x2="{x}" y2="{}"/>"#,
                rows_bottom
            );
            let label = xml_escape(&tick_label(tk, unit, unit_name));
            let _ = writeln!(
                s,
                r#"<text class="tick" x="{x}" y="{axis_y}" text-anchor="middle">{label}</text>"#
            );
            if !self.drawn.is_empty() && self.drawn.len() > 30 {
                let _ = writeln!(
                    s,
                    r#"<text class="tick" x="{x}" y="{bottom_axis_y}" text-anchor="middle">{label}</text>"#
                );
            }
        }
        s.push_str("</g>\n");
    }

    /// How many processes ran at each moment (every process, drawn or not).
    pub(super) fn strip(&self, s: &mut String) {
        let Layout {
            strip_top,
            strip_base,
            ..
        } = self.y;
        let cols = PLOT_W as usize;
        let iv: Vec<(u64, u64)> = self.rows.iter().map(|r| (r.start, r.end)).collect();
        let (conc_max, per_col) = concurrency(&iv, self.t0, self.t1, cols);
        let (jobs_max, jobs_avg) = self.jobs_running();
        let _ = writeln!(
            s,
            r#"<g id="concurrency" data-max="{conc_max}" data-jobs-max="{jobs_max}" data-jobs-avg="{jobs_avg:.2}">"#
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">processes running</text>"#,
            PLOT_X - 8.0,
            strip_top + 22.0
        );
        let _ = writeln!(
            s,
            r#"<text class="sub" x="{}" y="{}" text-anchor="end">max {conc_max}</text>"#,
            PLOT_X - 8.0,
            strip_top + 38.0
        );
        let _ = writeln!(
            s,
            r#"<text class="sub" x="{}" y="{}" text-anchor="end">jobs (programs at work): max {jobs_max}, {jobs_avg:.1} on average</text>"#,
            PLOT_X - 8.0,
            strip_top + 54.0
        );
        let _ = writeln!(
            s,
            r##"<line x1="{PLOT_X}" y1="{strip_base}" x2="{}" y2="{strip_base}" stroke="#999"/>"##,
            PLOT_X + PLOT_W
        );
        if conc_max > 0 {
            let y_of = |v: u32| strip_base - f64::from(v) / f64::from(conc_max) * STRIP_H;
            let mut d = format!("M{} {}", f1(PLOT_X), f1(strip_base));
            let col_w = PLOT_W / cols as f64;
            let mut prev = None;
            for (c, &v) in per_col.iter().enumerate() {
                if prev != Some(v) {
                    let _ = write!(d, "H{}V{}", f1(PLOT_X + c as f64 * col_w), f1(y_of(v)));
                    prev = Some(v);
                }
            }
            let _ = write!(d, "H{}V{}Z", f1(PLOT_X + PLOT_W), f1(strip_base));
            let _ = writeln!(s, r#"<path class="conc" d="{d}"/>"#);
            let _ = writeln!(
                s,
                r#"<line class="maxline" x1="{PLOT_X}" y1="{}" x2="{}" y2="{}"/>"#,
                f1(strip_top),
                PLOT_X + PLOT_W,
                f1(strip_top)
            );
        }
        s.push_str("</g>\n");
    }
}
