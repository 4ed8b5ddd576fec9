//! Renders a [`CiReport`] the way CI systems display it: GitHub Actions
//! workflow commands, SARIF 2.1.0, JUnit XML and a markdown summary
//! (docs/ci.md). Every rendering is a pure function of the report, so the
//! same inputs give the same bytes.

use crate::args::CiFormat;
use muster::ci::{CiReport, Finding, Level};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// `report` in CI format `format` (text and JSON are the command's own).
pub fn render(format: CiFormat, report: &CiReport) -> String {
    match format {
        CiFormat::Github => github(report),
        CiFormat::Sarif => sarif(report),
        CiFormat::Junit => junit(report),
        CiFormat::Markdown | CiFormat::Text | CiFormat::Json => markdown(report),
    }
}

/// GitHub Actions workflow commands: one `::error` / `::warning` per
/// finding, on its file and line, then a `::notice` with the count.
pub fn github(report: &CiReport) -> String {
    let mut out = String::new();
    for f in report.findings() {
        let mut props = Vec::new();
        if let Some(file) = &f.file {
            props.push(format!("file={}", property(file)));
            if let Some(line) = f.line {
                props.push(format!("line={line}"));
            }
        }
        props.push(format!("title={}", property(&format!("muster {}", f.rule))));
        let mut message = f.message.clone();
        for line in &f.details {
            message.push_str("\n  ");
            message.push_str(line);
        }
        if let Some(help) = &f.help {
            message.push_str("\nhelp: ");
            message.push_str(help);
        }
        let _ = writeln!(
            out,
            "::{} {}::{}",
            f.level.as_str(),
            props.join(","),
            data(&message)
        );
    }
    let _ = writeln!(
        out,
        "::notice title=muster {}::{}",
        report.command,
        data(&summary(report))
    );
    out
}

/// `N checks, M failed, W warnings`.
fn summary(report: &CiReport) -> String {
    let warnings = report
        .findings()
        .filter(|f| f.level == Level::Warning)
        .count();
    format!(
        "muster {}: {} check(s), {} failed, {} warning(s)",
        report.command,
        report.cases.len(),
        report.failures(),
        warnings
    )
}

/// A workflow command's message, escaped as the runner reads it.
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value, escaped as the runner reads it.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

/// SARIF 2.1.0: one run of muster; one rule per code found, one result
/// per finding, located at its file and line when known.
pub fn sarif(report: &CiReport) -> String {
    let mut rules: BTreeMap<&str, usize> = BTreeMap::new();
    for f in report.findings() {
        let next = rules.len();
        rules.entry(f.rule.as_str()).or_insert(next);
    }
    let mut ordered: Vec<(&str, usize)> = rules.iter().map(|(r, i)| (*r, *i)).collect();
    ordered.sort_by_key(|(_, i)| *i);
    let rule_list: Vec<Value> = ordered
        .iter()
        .map(|(id, _)| {
            json!({
                "id": id,
                "shortDescription": {"text": format!("muster {}: {id}", report.command)},
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings()
        .map(|f| {
            let mut text = f.message.clone();
            for line in &f.details {
                text.push_str("\n  ");
                text.push_str(line);
            }
            if let Some(help) = &f.help {
                text.push_str("\nhelp: ");
                text.push_str(help);
            }
            let mut result = json!({
                "ruleId": f.rule,
                "ruleIndex": rules[f.rule.as_str()],
                "level": f.level.as_str(),
                "message": {"text": text},
            });
            if let Some(data) = &f.data {
                result["properties"] = json!({"muster/details": data});
            }
            if let Some(file) = &f.file {
                let mut physical = json!({"artifactLocation": {"uri": uri(file)}});
                if let Some(line) = f.line {
                    physical["region"] = json!({"startLine": line});
                }
                result["locations"] = json!([{"physicalLocation": physical}]);
            }
            result
        })
        .collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "muster",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rule_list,
            }},
            "results": results,
        }],
    });
    muster::answer::json_text(&doc)
}

/// A relative path as a URI reference: `/` separators, and every byte
/// outside the unreserved set and `/` percent-encoded.
fn uri(path: &str) -> String {
    let mut out = String::new();
    for b in path.replace('\\', "/").bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// JUnit XML: one test suite for the command, one test case per check,
/// a `<failure>` per failed check listing its errors, warnings in
/// `<system-out>`.
pub fn junit(report: &CiReport) -> String {
    let name = format!("muster {}", report.command);
    let tests = report.cases.len();
    let failures = report.failures();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\">",
        xml(&name)
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">",
        xml(&name)
    );
    for case in &report.cases {
        let _ = write!(
            out,
            "    <testcase name=\"{}\" classname=\"{}\"",
            xml(&case.name),
            xml(&name)
        );
        if let Some(file) = &case.file {
            let _ = write!(out, " file=\"{}\"", xml(file));
        }
        out.push_str(">\n");
        if !case.properties.is_empty() {
            out.push_str("      <properties>\n");
            for (k, v) in &case.properties {
                let _ = writeln!(
                    out,
                    "        <property name=\"{}\" value=\"{}\"/>",
                    xml(k),
                    xml(v)
                );
            }
            out.push_str("      </properties>\n");
        }
        let errors: Vec<&Finding> = case
            .findings
            .iter()
            .filter(|f| f.level == Level::Error)
            .collect();
        if let Some(first) = errors.first() {
            let body: Vec<String> = errors.iter().map(|f| located(f)).collect();
            let _ = writeln!(
                out,
                "      <failure message=\"{}\" type=\"{}\">{}</failure>",
                xml(&first.message),
                xml(&first.rule),
                xml(&body.join("\n"))
            );
        }
        let warnings: Vec<String> = case
            .findings
            .iter()
            .filter(|f| f.level == Level::Warning)
            .map(located)
            .collect();
        if !warnings.is_empty() {
            let _ = writeln!(
                out,
                "      <system-out>{}</system-out>",
                xml(&warnings.join("\n"))
            );
        }
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// `file:line: level[rule]: message` (and the help).
fn located(f: &Finding) -> String {
    let mut out = String::new();
    match (&f.file, f.line) {
        (Some(file), Some(line)) => {
            let _ = write!(out, "{file}:{line}: ");
        }
        (Some(file), None) => {
            let _ = write!(out, "{file}: ");
        }
        _ => {}
    }
    let _ = write!(out, "{}[{}]: {}", f.level.as_str(), f.rule, f.message);
    for line in &f.details {
        let _ = write!(out, "\n    {line}");
    }
    if let Some(help) = &f.help {
        let _ = write!(out, "\n  help: {help}");
    }
    out
}

/// Text as XML 1.0 character data or an attribute value: the five
/// special characters escaped, and characters XML 1.0 cannot hold at all
/// written as `\u{XXXX}`.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(ch),
            c if (c as u32) < 0x20 || matches!(c as u32, 0xFFFE | 0xFFFF) => {
                let _ = write!(out, "\\u{{{:04X}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A markdown summary for `$GITHUB_STEP_SUMMARY`: a table of checks, then
/// every finding with its place.
pub fn markdown(report: &CiReport) -> String {
    let md = crate::diff::md;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### muster {}\n\n{}\n",
        report.command,
        md(&summary(report))
    );
    let keys: Vec<&str> = {
        let mut seen = Vec::new();
        for case in &report.cases {
            for (k, _) in &case.properties {
                if !seen.contains(&k.as_str()) {
                    seen.push(k.as_str());
                }
            }
        }
        seen
    };
    let _ = write!(out, "| check | result |");
    for k in &keys {
        let _ = write!(out, " {} |", md(k));
    }
    let _ = write!(out, "\n|---|---|");
    for _ in &keys {
        out.push_str("---|");
    }
    out.push('\n');
    for case in &report.cases {
        let _ = write!(
            out,
            "| {} | {} |",
            md(&case.name),
            if case.failed() {
                "**failed**"
            } else {
                "passed"
            }
        );
        for k in &keys {
            let v = case
                .properties
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
                .unwrap_or("");
            let _ = write!(out, " {} |", md(v));
        }
        out.push('\n');
    }
    let findings: Vec<&Finding> = report.findings().collect();
    if !findings.is_empty() {
        out.push_str("\n| level | rule | where | message |\n|---|---|---|---|\n");
        for f in &findings {
            let place = match (&f.file, f.line) {
                (Some(file), Some(line)) => crate::diff::md_code(&format!("{file}:{line}")),
                (Some(file), None) => crate::diff::md_code(file),
                _ => String::new(),
            };
            let mut message = md(&f.message);
            if let Some(help) = &f.help {
                let _ = write!(message, " (help: {})", md(help));
            }
            let _ = writeln!(
                out,
                "| {} | {} | {place} | {message} |",
                f.level.as_str(),
                crate::diff::md_code(&f.rule)
            );
        }
        // What changed, under the table: an indented code block per
        // finding, every line of it indented, so no server text leaves it.
        let detailed: Vec<&&Finding> = findings.iter().filter(|f| !f.details.is_empty()).collect();
        if !detailed.is_empty() {
            out.push_str("\n#### What changed\n");
            for f in detailed {
                let _ = writeln!(out, "\n{}\n", md(&f.message));
                for line in &f.details {
                    let _ = writeln!(out, "    {line}");
                }
            }
        }
    }
    out
}
