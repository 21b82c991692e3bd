//! The console's Collections view (issue 16) in headless Chromium against the real binary:
//! records made in the typed editor reach REST and REST's reach the grid; the filter builder's
//! query returns the same rows as the curl and `svc records list` commands it previews, in
//! rows and in raw mode; hidden columns stay hidden; the schema editor defines and changes a
//! collection whose file field uploads and downloads; export and import move records in the
//! CLI's formats, both ways.

use crate::cli_support::Cli;
use crate::common::*;
use crate::console_support::{acme_server, blocking, stop, Browser};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const ACME: &str = "domains:acme";
const WAIT: Duration = Duration::from_secs(5);

/// A CLI user holding an API key of the administrator.
fn cli_with_key(server: &Server) -> Cli {
    let (_, key) = server.create_api_key(&server.admin_token(), "cli");
    let mut cli = Cli::new(server);
    cli.env.push(("SVC_API_KEY".into(), key));
    cli
}

/// A browser logged in as the administrator, with `table` of `acme` open and its grid drawn.
async fn table_in_console(server: &Server, table: &str) -> Browser {
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    show_table(&browser, server, table).await;
    browser
}

/// Opens `table` of `acme` in `browser` and waits until its grid is drawn.
async fn show_table(browser: &Browser, server: &Server, table: &str) {
    browser
        .open(&server.base, &format!("#/acme/records/{table}"))
        .await;
    browser
        .until(
            "the grid",
            WAIT,
            "document.querySelector('#records tbody tr')",
        )
        .await;
}

/// The record ids the grid shows, in order.
async fn grid_ids(browser: &Browser) -> Vec<String> {
    let ids = browser
        .client
        .execute(
            "return [...document.querySelectorAll('#records tbody tr')].map(tr => tr.dataset.id);",
            vec![],
        )
        .await
        .expect("grid ids");
    serde_json::from_value(ids).expect("ids")
}

fn ids_of(records: &Value) -> Vec<String> {
    records
        .as_array()
        .expect("array")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_string())
        .collect()
}

/// Waits until the grid and the preview agree on the current query, then returns its ids.
async fn settled_ids(browser: &Browser, what: &str, needle: &str) -> Vec<String> {
    let script = format!(
        "document.querySelector('#preview').textContent.includes({}) && \
         document.querySelector('#page').textContent",
        json!(needle)
    );
    browser.until(what, WAIT, &script).await;
    grid_ids(browser).await
}

/// Fills the builder's last condition row.
async fn condition(browser: &Browser, field: &str, op: &str, ty: &str, value: &str, any: bool) {
    browser.click("#filters .add").await;
    let script = "const tr = [...document.querySelectorAll('#filters .condition')].pop();
         const [field, op, ty, value, any] = arguments;
         tr.querySelector('[name=field]').value = field;
         tr.querySelector('[name=op]').value = op;
         tr.querySelector('[name=type]').value = ty;
         tr.querySelector('[name=value]').value = value;
         tr.querySelector('[name=any]').checked = any;";
    browser
        .client
        .execute(
            script,
            vec![json!(field), json!(op), json!(ty), json!(value), json!(any)],
        )
        .await
        .expect("fill a condition");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_made_in_the_console_reach_rest_and_rest_records_reach_the_grid() {
    let server = acme_server(|server| {
        server.create_record(
            ACME,
            "collections",
            &json!({"name": "orders", "fields": [
                {"name": "qty", "type": "number", "required": true},
                {"name": "rush", "type": "boolean"},
                {"name": "meta", "type": "json"}]}),
        );
        server.create_record(ACME, "orders", &json!({"id": "rest1", "qty": 7}));
    })
    .await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/acme/records/orders").await;
    browser
        .until(
            "the REST record in the grid",
            WAIT,
            "document.querySelector(\"#records tr[data-id='acme.orders:rest1']\")",
        )
        .await;
    let preview = browser.text("#preview").await;
    assert!(
        preview.contains("/svc/orders/all?limit=50&offset=0"),
        "{preview}"
    );

    // The typed editor: a number, a boolean and JSON, each sent as its type.
    browser.fill("#editor input[name=qty]", "3").await;
    browser
        .client
        .execute(
            "const form = document.querySelector('#editor');
             form.elements.rush.value = 'true';
             form.elements.meta.value = '{\"line\": 2}';
             form.elements.rest.value = '{\"id\": \"web1\"}';",
            vec![],
        )
        .await
        .expect("fill the editor");
    browser.click("#editor button[type=submit]").await;
    browser
        .until(
            "the console's record in the grid",
            WAIT,
            "document.querySelector(\"#records tr[data-id='acme.orders:web1']\")",
        )
        .await;
    let server = Arc::new(server);
    let reader = server.clone();
    let made = blocking(move || reader.get_json(ACME, &rec_path("acme.orders:web1"))).await;
    assert_eq!(made["qty"], json!(3), "{made}");
    assert_eq!(made["rush"], json!(true), "{made}");
    assert_eq!(made["meta"], json!({"line": 2}), "{made}");

    // Editing updates in place; a value the schema refuses shows the server's sentence.
    browser
        .click("#records tr[data-id='acme.orders:web1'] td:nth-last-child(2) button")
        .await;
    browser
        .until(
            "the editor on web1",
            WAIT,
            "document.querySelector('#editor-title').textContent.includes('web1')",
        )
        .await;
    browser
        .client
        .execute(
            "document.querySelector('#editor').elements.qty.value = '11';",
            vec![],
        )
        .await
        .expect("edit qty");
    browser.click("#editor button[type=submit]").await;
    let reader = server.clone();
    let edited = blocking(move || {
        reader.poll(WAIT, "the edit stored", || {
            let r = reader.get_json(ACME, &rec_path("acme.orders:web1"));
            (r["qty"] == json!(11)).then_some(r)
        })
    })
    .await;
    assert_eq!(
        edited["rush"],
        json!(true),
        "untouched fields stay: {edited}"
    );
    browser.screenshot("collections").await;

    // Sorting by a column asks the API to sort.
    browser.click("#records th[data-column=qty] button").await;
    let ids = settled_ids(
        &browser,
        "the grid sorted by qty",
        "sort=%5Bqty%5D%5Basc%5D",
    )
    .await;
    assert_eq!(ids, ["acme.orders:rest1", "acme.orders:web1"]);
    browser.close().await;
    stop(server).await;
}

/// The curl URL's path and the `svc` command line of the preview.
async fn previewed(browser: &Browser) -> (String, String) {
    let text = browser.text("#preview").await;
    let url = text
        .split('\'')
        .nth(1)
        .unwrap_or_else(|| panic!("no curl URL in {text}"));
    let path = url[url.find("/svc/").expect("a /svc/ path")..].to_string();
    let cli = text
        .lines()
        .find(|l| l.starts_with("svc "))
        .unwrap_or_else(|| panic!("no svc command in {text}"))
        .to_string();
    (path, cli)
}

/// Runs the previewed `svc …` line through a shell, as a user pasting it would.
fn run_previewed(cli: &Cli, line: &str) -> Vec<String> {
    let program = format!(
        "'{}'{} --output json",
        env!("CARGO_BIN_EXE_svc"),
        &line[3..]
    );
    let mut command = std::process::Command::new("sh");
    command.arg("-c").arg(&program);
    cli.configure(&mut command);
    let out = command.output().expect("run sh");
    assert!(
        out.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records: Value = serde_json::from_slice(&out.stdout).expect("the CLI prints JSON");
    ids_of(&records)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filter_builders_query_returns_the_rows_of_the_commands_it_previews() {
    let (server, cli) = blocking(|| {
        let server = Server::start();
        server.create_domain("acme");
        for i in 0..20 {
            let name = if i % 3 == 0 { "Pump" } else { "Valve" };
            let tags = if i % 2 == 0 {
                json!(["a", "x"])
            } else {
                json!(["b"])
            };
            let site = ["north", "south", "east", "west"][i % 4];
            server.create_record(
                ACME,
                "parts",
                &json!({"id": format!("p{i:02}"), "name": format!("{name} {i}"), "price": i,
                        "site": site, "tags": tags}),
            );
        }
        let cli = cli_with_key(&server);
        (server, cli)
    })
    .await;
    let browser = table_in_console(&server, "parts").await;
    condition(&browser, "price", "gt", "number", "5", false).await;
    condition(&browser, "name", "~", "", "pump", false).await;
    condition(&browser, "site", "eq", "string", "north", true).await;
    condition(&browser, "site", "eq", "string", "east", true).await;
    browser.click("#filters .apply").await;
    let shown = settled_ids(&browser, "the filtered grid", "filter_or").await;
    assert_eq!(
        shown,
        ["acme.parts:p06", "acme.parts:p12", "acme.parts:p18"]
    );
    browser.screenshot("filter-builder").await;

    let server = Arc::new(server);
    let cli = Arc::new(cli);
    let check = |server: Arc<Server>, cli: Arc<Cli>, path: String, line: String| {
        blocking(move || {
            let rest = ids_of(&server.get_json(ACME, &path));
            let by_cli = run_previewed(&cli, &line);
            (rest, by_cli)
        })
    };
    let (path, line) = previewed(&browser).await;
    let (rest, by_cli) = check(server.clone(), cli.clone(), path, line.clone()).await;
    assert_eq!(rest, shown, "the curl URL returns the grid's rows");
    assert_eq!(by_cli, shown, "`{line}` returns the grid's rows");

    // Raw mode shows the same query, and takes one the rows then show.
    browser.click("#filters .mode").await;
    let raw = browser
        .client
        .execute(
            "return document.querySelector('#filters .raw').value;",
            vec![],
        )
        .await
        .expect("raw text");
    let raw = raw.as_str().expect("text");
    assert!(raw.contains("filter[price][gt][number]=5"), "{raw}");
    assert!(raw.contains("filter_or[1][site][eq][string]=east"), "{raw}");
    browser
        .client
        .execute(
            "document.querySelector('#filters .raw').value =
               'filter[tags][CONTAINSANY][object]=[\"x\"]\\nfilter[price][lte]=10';",
            vec![],
        )
        .await
        .expect("type a raw query");
    browser.click("#filters .apply").await;
    let shown = settled_ids(&browser, "the raw query's grid", "CONTAINSANY").await;
    let even: Vec<String> = (0..=10)
        .step_by(2)
        .map(|i| format!("acme.parts:p{i:02}"))
        .collect();
    assert_eq!(shown, even);
    let (path, line) = previewed(&browser).await;
    let (rest, by_cli) = check(server.clone(), cli.clone(), path, line.clone()).await;
    assert_eq!(rest, shown);
    assert_eq!(by_cli, shown, "`{line}` returns the grid's rows");
    browser.click("#filters .mode").await;
    let ops = browser
        .client
        .execute(
            "return [...document.querySelectorAll('#filters .condition [name=op]')].map(s => s.value);",
            vec![],
        )
        .await
        .expect("operators");
    assert_eq!(ops, json!(["CONTAINSANY", "lte"]));

    // A malformed query gets the server's sentence, and the grid keeps its rows.
    condition(&browser, "price", "gt", "number", "five", false).await;
    browser.click("#filters .apply").await;
    let said = browser
        .until(
            "the refusal",
            WAIT,
            "!document.querySelector('.error').hidden && document.querySelector('.error').textContent",
        )
        .await;
    assert!(said.as_str().expect("text").contains("five"), "{said}");
    assert_eq!(grid_ids(&browser).await, even);
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_editor_defines_a_collection_whose_files_upload_and_download() {
    let server = acme_server(|_| {}).await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/acme/records/docs").await;
    browser.click("#schema-panel summary").await;
    browser
        .client
        .execute(
            "const row = document.querySelector('#schema .schema-field');
             row.querySelector('[name=name]').value = 'title';
             row.querySelector('[name=required]').checked = true;
             document.querySelector('#schema .add-field').click();
             const file = [...document.querySelectorAll('#schema .schema-field')].pop();
             file.querySelector('[name=name]').value = 'manual';
             file.querySelector('[name=type]').value = 'file';",
            vec![],
        )
        .await
        .expect("define fields");
    browser.click("#schema button[type=submit]").await;
    browser
        .until(
            "the typed editor",
            WAIT,
            "document.querySelector('#editor input[type=file][name=manual]')",
        )
        .await;
    let server = Arc::new(server);
    let reader = server.clone();
    let schema = blocking(move || reader.get_json(ACME, &rec_path("acme.collections:docs"))).await;
    assert_eq!(
        schema["fields"],
        json!([{"name": "title", "type": "string", "required": true},
               {"name": "manual", "type": "file", "required": false}])
    );

    // A record with a file: REST serves the bytes, and the grid's button downloads them.
    let bytes: Vec<u8> = b"torque 40 Nm\n"
        .iter()
        .copied()
        .cycle()
        .take(4000)
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("manual.txt");
    std::fs::write(&file, &bytes).expect("write the file");
    browser
        .fill("#editor input[name=title]", "Pump manual")
        .await;
    browser
        .choose_file("#editor input[name=manual]", &file)
        .await;
    browser.click("#editor button[type=submit]").await;
    browser
        .until(
            "the file in the grid",
            WAIT,
            "document.querySelector('#records button.file')",
        )
        .await;
    let reader = server.clone();
    let (stored, served) = blocking(move || {
        let list = reader.get_json(ACME, "/svc/docs/all");
        let record = list[0].clone();
        let name = record["manual"].as_str().expect("file name").to_string();
        let id = record["id"].as_str().expect("id").to_string();
        let path = format!("/svc/file/{}/manual/{}", enc(&id), enc(&name));
        let served = reader
            .admin_in(ACME, reqwest::Method::GET, &path)
            .send()
            .expect("download")
            .bytes()
            .expect("bytes");
        (record, served.to_vec())
    })
    .await;
    assert_eq!(stored["title"], json!("Pump manual"));
    assert_eq!(served, bytes);
    let name = stored["manual"].as_str().expect("name").to_string();
    browser.click("#records button.file").await;
    assert_eq!(browser.downloaded(&name, WAIT).await, bytes);

    // A unique index added later is enforced at once; the refusal is the server's sentence.
    browser
        .client
        .execute(
            "document.querySelector('#schema .add-index').click();
             const row = [...document.querySelectorAll('#schema .schema-index')].pop();
             row.querySelector('[name=fields]').value = 'title';
             row.querySelector('[name=unique]').checked = true;",
            vec![],
        )
        .await
        .expect("add an index");
    browser.click("#schema button[type=submit]").await;
    let reader = server.clone();
    blocking(move || {
        reader.poll(WAIT, "the index stored", || {
            let s = reader.get_json(ACME, &rec_path("acme.collections:docs"));
            (s["indexDetails"] == json!([{"fields": ["title"], "isUnique": true}])).then_some(())
        })
    })
    .await;
    browser
        .until(
            "the editor again",
            WAIT,
            "document.querySelector('#editor input[name=title]')",
        )
        .await;
    browser
        .fill("#editor input[name=title]", "Pump manual")
        .await;
    browser.click("#editor button[type=submit]").await;
    browser
        .until(
            "the conflict",
            WAIT,
            "!document.querySelector('.error').hidden && document.querySelector('.error').textContent",
        )
        .await;
    browser.screenshot("schema-editor").await;

    // Hidden columns stay hidden when the page is opened again.
    browser.click("#columns summary").await;
    browser.click("#columns input[data-column=title]").await;
    browser
        .until(
            "the title column hidden",
            WAIT,
            "!document.querySelector('#records th[data-column=title]')",
        )
        .await;
    browser.open(&server.base, "#/acme/tags").await;
    browser.open(&server.base, "#/acme/records/docs").await;
    browser
        .until(
            "the grid again",
            WAIT,
            "document.querySelector('#records th[data-column=manual]')",
        )
        .await;
    let title_shown = browser
        .client
        .execute(
            "return !!document.querySelector('#records th[data-column=title]');",
            vec![],
        )
        .await
        .expect("title column");
    assert_eq!(title_shown, json!(false));
    browser.close().await;
    stop(server).await;
}

/// Numbers as floats: JavaScript, like JSON, does not tell `5.0` from `5`.
fn as_floats(value: Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(items) => Value::Array(items.into_iter().map(as_floats).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, as_floats(v))).collect())
        }
        other => other,
    }
}

/// Records without the server's timestamps, by key, numbers as floats.
fn by_key(records: &Value) -> std::collections::BTreeMap<String, Value> {
    records
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            let mut r = r.as_object().expect("object").clone();
            r.remove("created_dt");
            r.remove("updated_dt");
            let id = r.remove("id").expect("id");
            let key = id.as_str().expect("id").rsplit_once(':').expect("key").1;
            (key.to_string(), as_floats(Value::Object(r)))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_and_import_move_records_in_the_clis_formats_both_ways() {
    let (server, cli) = blocking(|| {
        let server = Server::start();
        for domain in ["acme", "fromweb", "fromcli"] {
            server.create_domain(domain);
        }
        for i in 0..30 {
            let mut record = json!({
                "id": format!("r{i:02}"),
                "name": format!("Item {i}, \"quoted\"\nnext line"),
                "code": format!("{:03}", i % 7),
                "price": i as f64 * 1.25,
                "ok": i % 2 == 0,
                "tags": ["a", i.to_string()],
                "dims": {"w": i, "unit": "mm"},
                "unicode": "Größe ✓",
            });
            if i % 3 == 0 {
                record["maybe"] = json!(null);
            }
            server.create_record(ACME, "stock", &record);
        }
        let cli = cli_with_key(&server);
        (server, cli)
    })
    .await;
    let browser = table_in_console(&server, "stock").await;
    let server = Arc::new(server);
    let cli = Arc::new(cli);
    let reader = server.clone();
    let original = blocking(move || by_key(&reader.get_json(ACME, "/svc/stock/all"))).await;
    assert_eq!(original.len(), 30);

    for (format, file) in [("csv", "stock.csv"), ("json", "stock.json")] {
        // The console's export, imported by the CLI into another domain.
        browser.click(&format!("#export-{format}")).await;
        let bytes = browser.downloaded(file, WAIT).await;
        let path = browser.downloads.join(file);
        let (reader, importer) = (server.clone(), cli.clone());
        let copied = blocking(move || {
            let target = format!("{format}stock");
            importer.ok(&[
                "--domain",
                "fromweb",
                "records",
                "import",
                &target,
                &path.display().to_string(),
            ]);
            by_key(&reader.get_json("domains:fromweb", &format!("/svc/{target}/all")))
        })
        .await;
        assert_eq!(
            copied,
            original,
            "the console's {format} export ({} bytes)",
            bytes.len()
        );
        std::fs::remove_file(browser.downloads.join(file)).expect("remove the download");

        // The CLI's export, imported by the console into another domain.
        let exporter = cli.clone();
        let exported = blocking(move || {
            exporter
                .ok(&[
                    "--domain", "acme", "records", "export", "stock", "--output", format,
                ])
                .stdout
        })
        .await;
        let dir = tempfile::tempdir().expect("tempdir");
        let from_cli = dir.path().join(file);
        std::fs::write(&from_cli, exported).expect("write the export");
        browser
            .open(&server.base, &format!("#/fromcli/records/{format}stock"))
            .await;
        browser.choose_file("#import", &from_cli).await;
        let said = browser
            .until(
                "the import's report",
                Duration::from_secs(15),
                "/imported/.test(document.querySelector('#transfer').textContent) && document.querySelector('#transfer').textContent",
            )
            .await;
        assert_eq!(said, json!("imported 30 of 30"));
        let reader = server.clone();
        let target = format!("/svc/{format}stock/all");
        let imported = blocking(move || by_key(&reader.get_json("domains:fromcli", &target))).await;
        assert_eq!(
            imported, original,
            "the CLI's {format} export imported by the console"
        );
        show_table(&browser, &server, "stock").await;
    }
    browser.close().await;
    stop(server).await;
}
