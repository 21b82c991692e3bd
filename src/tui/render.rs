//! Drawing: the tag tree (only the rows in view are built), the detail pane with the payload and
//! the historian chart, the status bar with the connection state (and the alarms waiting for
//! acknowledgement), and the help overlay.

use super::app::{App, Mode, TrendState};
use super::mqtt::ConnState;
use super::payload::truncate;
use super::tree::{NodeId, Origin, Tag};
use crate::model::{LinkBrief, LinkState};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{
    Axis, Block, Borders, Cell, Chart, Clear, Dataset, GraphType, Paragraph, Row, Sparkline, Table,
    Wrap,
};
use ratatui::Frame;
use std::time::{Duration, Instant};

/// Characters of the per-row sparkline.
const SPARK_COLS: usize = 12;
const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &mut App, now: Instant) {
    let [main, status] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
    let (tree_area, detail_area) = if main.width >= 100 {
        let [a, b] = Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)])
            .areas(main);
        (a, b)
    } else {
        let [a, b] =
            Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(main);
        (a, b)
    };
    app.sync_selection();
    draw_tree(frame, app, tree_area, now);
    draw_detail(frame, app, detail_area, now);
    draw_status(frame, app, status);
    if app.help {
        draw_help(frame, main);
    }
}

fn draw_tree(frame: &mut Frame, app: &mut App, area: Rect, now: Instant) {
    let title = format!(
        " UNS · {} topics · {} msgs ",
        app.tree.topic_count(),
        app.tree.message_count()
    );
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let height = usize::from(inner.height);
    app.scroll_to_selection(height);
    let wide = inner.width >= 56;
    if app.tree.rows().is_empty() {
        let text = if app.tree.filter().is_empty() {
            format!("waiting for messages on `{}`…", app.subscription)
        } else {
            format!("no topic matches `{}`", app.tree.filter())
        };
        frame.render_widget(Paragraph::new(text).dark_gray(), inner);
        return;
    }
    let end = (app.offset + height).min(app.tree.rows().len());
    let ids: Vec<NodeId> = app.tree.rows()[app.offset..end].to_vec();
    // The name column fits the longest label in view, within 12 and 45 % of the width.
    let longest = ids
        .iter()
        .map(|&id| label(app, id).chars().count())
        .max()
        .unwrap_or(0);
    let name_max = (usize::from(inner.width) * 45 / 100).max(12);
    let name_col = longest.clamp(12, name_max) as u16;
    let mut constraints = vec![Constraint::Length(name_col), Constraint::Fill(1)];
    if wide {
        constraints.extend([
            Constraint::Length(6),
            Constraint::Length(7),
            Constraint::Length(SPARK_COLS as u16),
        ]);
    }
    let cols = Layout::horizontal(constraints.clone())
        .spacing(1)
        .split(inner);
    let name_w = usize::from(cols[0].width);
    let value_w = usize::from(cols[1].width);
    let rows: Vec<Row> = ids
        .into_iter()
        .map(|id| {
            let label = label(app, id);
            let node = app.tree.node(id);
            let mut name_style = Style::default();
            if node.has_children() {
                name_style = name_style.fg(Color::Cyan);
            }
            let mut cells = vec![Cell::from(truncate(&label, name_w)).style(name_style)];
            match &node.tag {
                Some(tag) => {
                    let mut style = Style::default();
                    if tag.is_fresh(now) {
                        style = style.fg(Color::Yellow).add_modifier(Modifier::BOLD);
                    }
                    cells.push(Cell::from(tag.payload.one_line(value_w)).style(style));
                    if wide {
                        cells.push(Cell::from(age(now.saturating_duration_since(tag.updated))));
                        cells.push(Cell::from(rate(app.tree.rate(id, now))));
                        cells.push(Cell::from(spark(tag, SPARK_COLS)).green());
                    }
                }
                None if !node.expanded => {
                    cells.push(Cell::from(format!("({} topics)", node.topics)).dark_gray());
                }
                None => {}
            }
            let row = Row::new(cells);
            if Some(id) == app.selected {
                row.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                row
            }
        })
        .collect();
    frame.render_widget(Table::new(rows, constraints).column_spacing(1), inner);
}

/// A tree row's name: indentation, expand marker, level name.
fn label(app: &App, id: NodeId) -> String {
    let node = app.tree.node(id);
    let marker = match (node.has_children(), node.expanded) {
        (false, _) => "  ",
        (true, true) => "▾ ",
        (true, false) => "▸ ",
    };
    let name = if node.name.is_empty() {
        "∅"
    } else {
        node.name.as_str()
    };
    format!("{}{marker}{name}", "  ".repeat(node.depth))
}

fn draw_detail(frame: &mut Frame, app: &App, area: Rect, now: Instant) {
    let selected = app.selected.map(|id| app.tree.node(id));
    let title = selected.map_or(" detail ".to_string(), |n| format!(" {} ", n.path));
    let block = Block::default().borders(Borders::ALL).title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(node) = selected else {
        frame.render_widget(Paragraph::new("no topic selected").dark_gray(), inner);
        return;
    };
    let Some(tag) = &node.tag else {
        let text = format!(
            "{}\n{} topics below; Enter or Space expands/collapses",
            node.path, node.topics
        );
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), inner);
        return;
    };
    let id = app.selected.unwrap_or_default();
    let historized = app.historized.contains(&node.path);
    let chart_h = if inner.height >= 16 {
        inner.height * 2 / 5
    } else {
        inner.height / 3
    };
    let [info, payload, chart] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(1),
        Constraint::Length(chart_h),
    ])
    .areas(inner);
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    // A value from the server's last values has no MQTT delivery to describe.
    let origin = match tag.origin {
        Origin::Snapshot => vec!["server's last value".into()],
        _ => vec![
            "retained ".dark_gray(),
            Span::raw(yes_no(tag.retained())),
            "  QoS ".dark_gray(),
            Span::raw(tag.qos.to_string()),
        ],
    };
    let info_lines = vec![
        Line::from_iter(origin.into_iter().chain([
            "  updates ".dark_gray(),
            Span::raw(tag.count.to_string()),
            "  rate ".dark_gray(),
            Span::raw(rate(app.tree.rate(id, now))),
        ])),
        Line::from(vec![
            "age ".dark_gray(),
            Span::raw(age(now.saturating_duration_since(tag.updated))),
            "  size ".dark_gray(),
            Span::raw(format!("{} B", tag.size)),
            "  ".into(),
            Span::raw(tag.payload.kind()),
            "  historized ".dark_gray(),
            Span::raw(yes_no(historized)),
        ]),
    ];
    frame.render_widget(Paragraph::new(info_lines), info);
    frame.render_widget(
        Paragraph::new(Text::raw(tag.payload.pretty())).wrap(Wrap { trim: false }),
        payload,
    );
    if chart.height < 3 {
        return;
    }
    match (&app.trend, historized) {
        (Some(view), true) if view.topic == node.path => draw_trend(frame, &view.state, chart),
        (_, true) => frame.render_widget(trend_block("loading history…"), chart),
        (_, false) => draw_live_spark(frame, tag, chart),
    }
}

fn trend_block(message: &str) -> Paragraph<'_> {
    Paragraph::new(message.to_string())
        .dark_gray()
        .wrap(Wrap { trim: true })
        .block(
            Block::default()
                .borders(Borders::TOP)
                .title(" last hour · historian "),
        )
}

fn draw_trend(frame: &mut Frame, state: &TrendState, area: Rect) {
    let trend = match state {
        TrendState::Loading => return frame.render_widget(trend_block("loading history…"), area),
        TrendState::Failed(error) => return frame.render_widget(trend_block(error), area),
        TrendState::Ready(trend) if trend.points.is_empty() => {
            let text = format!(
                "no numeric history in the last hour ({} values)",
                trend.total
            );
            return frame.render_widget(trend_block(&text), area);
        }
        TrendState::Ready(trend) => trend,
    };
    let (mut lo, mut hi) = trend
        .points
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &(_, y)| {
            (lo.min(y), hi.max(y))
        });
    if (hi - lo).abs() < f64::EPSILON {
        lo -= 1.0;
        hi += 1.0;
    }
    let dataset = Dataset::default()
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .green()
        .data(&trend.points);
    let chart = Chart::new(vec![dataset])
        .block(
            Block::default()
                .borders(Borders::TOP)
                .title(if trend.bucketed {
                    format!(" last hour · historian · {} 10 s means ", trend.total)
                } else {
                    format!(" last hour · historian · {} values ", trend.total)
                }),
        )
        .x_axis(
            Axis::default()
                .bounds([-60.0, 0.0])
                .labels(["-60m", "-30m", "now"]),
        )
        .y_axis(Axis::default().bounds([lo, hi]).labels([
            number(lo),
            number((lo + hi) / 2.0),
            number(hi),
        ]));
    frame.render_widget(chart, area);
}

fn draw_live_spark(frame: &mut Frame, tag: &Tag, area: Rect) {
    let values: Vec<f64> = tag.spark().iter().copied().collect();
    if values.is_empty() {
        let block = Block::default()
            .borders(Borders::TOP)
            .title(" live values · not historized ");
        frame.render_widget(
            Paragraph::new("no numeric values").dark_gray().block(block),
            area,
        );
        return;
    }
    let (lo, hi) = values
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let span = (hi - lo).max(f64::EPSILON);
    let data: Vec<u64> = values
        .iter()
        .map(|v| 1 + ((v - lo) / span * 99.0) as u64)
        .collect();
    let title = format!(
        " live values · {} … {} · not historized ",
        number(lo),
        number(hi)
    );
    frame.render_widget(
        Sparkline::default()
            .block(Block::default().borders(Borders::TOP).title(title))
            .data(&data)
            .max(100)
            .green(),
        area,
    );
}

fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    let mut spans = match &app.conn {
        ConnState::Connected => vec![" ● connected ".black().on_green()],
        ConnState::Connecting => vec![" ◌ connecting… ".black().on_yellow()],
        ConnState::Disconnected { error, retry_in } => vec![format!(
            " ✕ disconnected: {} · retry in {} ",
            truncate(error, 60),
            age(*retry_in)
        )
        .white()
        .on_red()],
    };
    // Right after the connection, so a narrow terminal cuts anything but the alarms.
    spans.extend(alarm_span(app));
    spans.push(format!(" {} sub {} ", app.endpoint, app.subscription).into());
    if app.paused {
        let mut text = format!(" PAUSED · {} queued ", app.queued());
        if app.dropped > 0 {
            text.push_str(&format!("· {} dropped ", app.dropped));
        }
        spans.push(text.black().on_magenta());
    }
    match app.mode {
        Mode::Filter => spans.push(format!(" /{}▏", app.filter_input).yellow().bold()),
        Mode::Normal if !app.tree.filter().is_empty() => {
            spans.push(format!(" filter: {} ", app.tree.filter()).yellow())
        }
        Mode::Normal => {}
    }
    if let Some(error) = &app.last_values_error {
        spans.push(format!(" last values: {} ", truncate(error, 40)).red());
    }
    if let Some(error) = &app.historized_error {
        spans.push(format!(" historian: {} ", truncate(error, 40)).red());
    }
    spans.extend(link_spans("⇅", "upstreams", &app.upstreams));
    spans.extend(link_spans("⚙", "connectors", &app.connectors));
    let help = " ? help  q quit ";
    let [left, right] =
        Layout::horizontal([Constraint::Fill(1), Constraint::Length(help.len() as u16)])
            .areas(area);
    frame.render_widget(Paragraph::new(Line::from(spans)), left);
    frame.render_widget(Paragraph::new(help).dark_gray(), right);
}

/// ` ▲ N alarms unacknowledged ` coloured by the most urgent of them (none: dim); nothing when
/// the domain's alarms cannot be read.
fn alarm_span(app: &App) -> Option<Span<'static>> {
    let count = app.alarms.as_ref()?;
    let n = count.unacknowledged;
    if n == 0 {
        return Some(" no alarms unacknowledged ".dark_gray());
    }
    let text = format!(
        " ▲ {n} alarm{} unacknowledged ",
        if n == 1 { "" } else { "s" }
    );
    Some(match count.top {
        Some("critical") | Some("high") => text.white().on_red().bold(),
        Some("medium") => text.black().on_yellow(),
        _ => text.black().on_cyan(),
    })
}

/// Upstreams (and connectors) shown by name in the status bar; more are summed up.
const LINKS_SHOWN: usize = 4;

/// ` ⇅ name state ` per upstream (` ⚙ name state ` per connector), coloured by state.
fn link_spans(glyph: &str, noun: &str, links: &[LinkBrief]) -> Vec<Span<'static>> {
    let mut spans: Vec<Span<'static>> = links
        .iter()
        .take(LINKS_SHOWN)
        .map(|u| {
            let text = format!(" {glyph} {} {} ", truncate(&u.name, 20), u.state.name());
            match u.state {
                LinkState::Connected => text.black().on_green(),
                LinkState::Connecting | LinkState::Backoff => text.black().on_yellow(),
                LinkState::Error => text.white().on_red(),
                LinkState::Disabled | LinkState::Standby => text.dark_gray(),
            }
        })
        .collect();
    if links.len() > LINKS_SHOWN {
        spans.push(format!(" +{} {noun} ", links.len() - LINKS_SHOWN).into());
    }
    spans
}

const HELP: &[(&str, &str)] = &[
    ("↑ ↓ / k j", "move"),
    ("← / h", "collapse, or go to parent"),
    ("→ / l", "expand, or go to first child"),
    ("Enter Space", "expand / collapse"),
    ("PgUp PgDn g G", "page, first, last"),
    ("/", "filter topics by substring"),
    ("Esc", "clear the filter"),
    ("p", "pause / resume updates"),
    ("c", "clear the tree"),
    ("?", "this help"),
    ("q  Ctrl-C", "quit"),
];

fn draw_help(frame: &mut Frame, area: Rect) {
    let width = 50.min(area.width);
    let height = (HELP.len() as u16 + 4).min(area.height);
    let rect = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    let lines: Vec<Line> = HELP
        .iter()
        .map(|(keys, what)| Line::from(vec![format!(" {keys:<15}").bold(), Span::raw(*what)]))
        .collect();
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" svc tui · keys ")
                .title_bottom(" any key closes "),
        ),
        rect,
    );
}

/// `0.4s`, `12s`, `5m`, `3h`, `2d`.
pub fn age(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        0..10 => format!("{:.1}s", d.as_secs_f64()),
        10..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}

/// `2.5/s`, `12/s`, or `-` when idle.
pub fn rate(per_sec: f64) -> String {
    if per_sec <= 0.0 {
        "-".into()
    } else if per_sec < 10.0 {
        format!("{per_sec:.1}/s")
    } else {
        format!("{per_sec:.0}/s")
    }
}

/// A number for axis labels: integers plainly, others with up to 2 decimals.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e12 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// The last `width` numeric values as block characters scaled between their min and max.
pub fn spark(tag: &Tag, width: usize) -> String {
    let values = tag.spark();
    let recent: Vec<f64> = values
        .iter()
        .skip(values.len().saturating_sub(width))
        .copied()
        .collect();
    let (lo, hi) = recent
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let span = hi - lo;
    recent
        .iter()
        .map(|v| {
            if span <= f64::EPSILON {
                BARS[3]
            } else {
                BARS[(((v - lo) / span) * 7.0).round() as usize]
            }
        })
        .collect()
}
