//! Records: the CRUD round trip (201 create with server-set id and timestamps, get, PUT merge,
//! delete, 404 afterwards), client-supplied ids (bare key or full RecordID, duplicates → 409,
//! invalid → 400), empty tables, and files: multipart create/update with a `record` part plus
//! file parts, downloaded through `GET /svc/file/...` and `PATCH /svc/file`.

use crate::common::*;
use reqwest::blocking::multipart::{Form, Part};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

const ACME: &str = "domains:acme";

fn acme() -> Server {
    let server = Server::start();
    server.create_domain("acme");
    server
}

#[test]
fn crud_round_trip() {
    let server = acme();
    let body = json!({"name": "Widget A", "qty": 5, "active": true, "meta": {"color": "red", "sizes": [1, 2]}});
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/widgets")
        .json(&body)
        .send()
        .unwrap();
    let created = json_ok(resp, StatusCode::CREATED);
    let id = created["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("acme.widgets:"), "{id}");
    let created_dt = created["created_dt"].as_str().unwrap().to_string();
    let updated_dt = created["updated_dt"].as_str().unwrap().to_string();
    assert!(is_rfc3339_millis_utc(&created_dt), "{created_dt}");
    assert!(is_rfc3339_millis_utc(&updated_dt), "{updated_dt}");
    let age = chrono::Utc::now()
        - chrono::DateTime::parse_from_rfc3339(&created_dt)
            .unwrap()
            .with_timezone(&chrono::Utc);
    assert!(
        age.num_seconds().abs() < 60,
        "created_dt is not now: {created_dt}"
    );
    for (k, v) in body.as_object().unwrap() {
        assert_eq!(&created[k], v, "field {k}");
    }

    // Get.
    let path = rec_path(&id);
    assert_eq!(server.get_json(ACME, &path), created);

    // PUT merges.
    std::thread::sleep(Duration::from_millis(20));
    let resp = server
        .admin_in(ACME, Method::PUT, &path)
        .json(&json!({"qty": 7, "extra": "new field"}))
        .send()
        .unwrap();
    let updated = json_ok(resp, StatusCode::OK);
    assert_eq!(updated["id"], json!(id));
    assert_eq!(updated["name"], json!("Widget A"));
    assert_eq!(updated["meta"], body["meta"]);
    assert_eq!(updated["active"], json!(true));
    assert_eq!(updated["qty"], json!(7));
    assert_eq!(updated["extra"], json!("new field"));
    assert_eq!(updated["created_dt"], json!(created_dt));
    let new_updated = updated["updated_dt"].as_str().unwrap();
    assert!(is_rfc3339_millis_utc(new_updated));
    assert!(
        new_updated > updated_dt.as_str(),
        "{new_updated} <= {updated_dt}"
    );
    assert_eq!(server.get_json(ACME, &path), updated);

    // Delete.
    let resp = server.admin_in(ACME, Method::DELETE, &path).send().unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK), json!({"success": true}));
    let resp = server.admin_in(ACME, Method::GET, &path).send().unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    let resp = server.admin_in(ACME, Method::DELETE, &path).send().unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    let resp = server
        .admin_in(ACME, Method::PUT, &path)
        .json(&json!({"qty": 1}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    assert_eq!(server.count(ACME, "widgets"), 0);
}

#[test]
fn server_sets_timestamps_and_keeps_id() {
    let server = acme();
    let rec = server.create_record(
        ACME,
        "widgets",
        &json!({"id": "w1", "created_dt": "1999-01-01T00:00:00.000Z", "updated_dt": "1999-01-01T00:00:00.000Z"}),
    );
    assert_ne!(rec["created_dt"], json!("1999-01-01T00:00:00.000Z"));
    assert_ne!(rec["updated_dt"], json!("1999-01-01T00:00:00.000Z"));
    let path = rec_path("acme.widgets:w1");
    let resp = server
        .admin_in(ACME, Method::PUT, &path)
        .json(&json!({"created_dt": "1999-01-01T00:00:00.000Z", "v": 2}))
        .send()
        .unwrap();
    let updated = json_ok(resp, StatusCode::OK);
    assert_eq!(updated["created_dt"], rec["created_dt"]);
    assert_eq!(updated["id"], json!("acme.widgets:w1"));
    assert_eq!(updated["v"], json!(2));
}

#[test]
fn missing_record_is_404() {
    let server = acme();
    server.create_record(ACME, "widgets", &json!({"id": "exists"}));
    let path = rec_path("acme.widgets:doesnotexist");
    let resp = server.admin_in(ACME, Method::GET, &path).send().unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    let resp = server.admin_in(ACME, Method::DELETE, &path).send().unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    // A table never written.
    let resp = server
        .admin_in(ACME, Method::GET, &rec_path("acme.nothing:k"))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
}

#[test]
fn table_never_written_is_empty() {
    let server = acme();
    assert_eq!(server.get_json(ACME, "/svc/never_written/all"), json!([]));
    assert_eq!(
        server.get_json(ACME, "/svc/never_written/count"),
        json!({"count": 0})
    );
}

#[test]
fn client_supplied_ids() {
    let server = acme();
    let bare = server.create_record(ACME, "widgets", &json!({"id": "w-1_A", "n": 1}));
    assert_eq!(bare["id"], json!("acme.widgets:w-1_A"));
    let full = server.create_record(ACME, "widgets", &json!({"id": "acme.widgets:w2", "n": 2}));
    assert_eq!(full["id"], json!("acme.widgets:w2"));
    assert_eq!(
        server.get_json(ACME, &rec_path("acme.widgets:w2"))["n"],
        json!(2)
    );
    for bad in [
        json!({"id": "acme.gadgets:w3"}),
        json!({"id": "beta.widgets:w3"}),
        json!({"id": "bad key!"}),
        json!({"id": ""}),
        json!({"id": "a'--"}),
    ] {
        let resp = server
            .admin_in(ACME, Method::POST, "/svc/widgets")
            .json(&bad)
            .send()
            .unwrap();
        assert_error(resp, StatusCode::BAD_REQUEST, &["id"]);
    }
    assert_eq!(server.count(ACME, "widgets"), 2);
}

#[test]
fn duplicate_id_is_409() {
    let server = acme();
    server.create_record(ACME, "widgets", &json!({"id": "dup", "v": 1}));
    for body in [
        json!({"id": "dup", "v": 2}),
        json!({"id": "acme.widgets:dup", "v": 3}),
    ] {
        let resp = server
            .admin_in(ACME, Method::POST, "/svc/widgets")
            .json(&body)
            .send()
            .unwrap();
        assert_error(resp, StatusCode::CONFLICT, &[]);
    }
    assert_eq!(
        server.get_json(ACME, &rec_path("acme.widgets:dup"))["v"],
        json!(1)
    );
}

fn file_part(bytes: &[u8], name: &str, mime: &str) -> Part {
    Part::bytes(bytes.to_vec())
        .file_name(name.to_string())
        .mime_str(mime)
        .unwrap()
}

fn download_get(server: &Server, id: &str, field: &str, name: &str) -> reqwest::blocking::Response {
    let path = format!("/svc/file/{}/{}/{}", enc(id), field, enc(name));
    server.admin_in(ACME, Method::GET, &path).send().unwrap()
}

fn download_patch(
    server: &Server,
    table: &str,
    id: &str,
    field: &str,
    name: &str,
) -> reqwest::blocking::Response {
    server
        .admin_in(ACME, Method::PATCH, "/svc/file")
        .json(
            &json!({"fileName": name, "collectionName": table, "fieldName": field, "recordID": id}),
        )
        .send()
        .unwrap()
}

fn assert_bytes(resp: reqwest::blocking::Response, want: &[u8], mime_prefix: &str) {
    assert_eq!(resp.status(), StatusCode::OK);
    let ctype = header(&resp, "content-type");
    assert!(ctype.starts_with(mime_prefix), "content type {ctype}");
    assert!(!header(&resp, CORRELATION).is_empty());
    assert_eq!(resp.bytes().unwrap().as_ref(), want);
}

#[test]
fn multipart_create_and_download() {
    let server = acme();
    let text = b"hello file bytes\nsecond line\n".to_vec();
    let binary: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    let form = Form::new()
        .text(
            "record",
            json!({"title": "Pump manual", "pages": 12}).to_string(),
        )
        .part("manual", file_part(&text, "manual.txt", "text/plain"))
        .part(
            "blob",
            file_part(&binary, "data.bin", "application/octet-stream"),
        );
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/docs")
        .multipart(form)
        .send()
        .unwrap();
    let rec = json_ok(resp, StatusCode::CREATED);
    assert_eq!(rec["title"], json!("Pump manual"));
    assert_eq!(rec["pages"], json!(12));
    let id = rec["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("acme.docs:"));
    let manual = rec["manual"]
        .as_str()
        .expect("manual holds the file name")
        .to_string();
    let blob = rec["blob"]
        .as_str()
        .expect("blob holds the file name")
        .to_string();
    assert!(!manual.is_empty() && !blob.is_empty());
    assert_eq!(server.get_json(ACME, &rec_path(&id)), rec);

    assert_bytes(
        download_get(&server, &id, "manual", &manual),
        &text,
        "text/plain",
    );
    assert_bytes(
        download_patch(&server, "docs", &id, "manual", &manual),
        &text,
        "text/plain",
    );
    assert_bytes(download_get(&server, &id, "blob", &blob), &binary, "");
    assert_bytes(
        download_patch(&server, "docs", &id, "blob", &blob),
        &binary,
        "",
    );

    // Unknown file name, wrong field, unknown record.
    assert_error(
        download_get(&server, &id, "manual", "nope.txt"),
        StatusCode::NOT_FOUND,
        &[],
    );
    assert_error(
        download_patch(&server, "docs", &id, "manual", "nope.txt"),
        StatusCode::NOT_FOUND,
        &[],
    );
    assert_error(
        download_get(&server, "acme.docs:missing", "manual", &manual),
        StatusCode::NOT_FOUND,
        &[],
    );
}

#[test]
fn several_files_in_one_field_and_storage_layout() {
    let server = acme();
    let form = Form::new()
        .text("record", json!({"site": "North"}).to_string())
        .part("photos", file_part(b"first photo", "one.jpg", "image/jpeg"))
        .part(
            "photos",
            file_part(b"second photo", "two.jpg", "image/jpeg"),
        );
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/inspections")
        .multipart(form)
        .send()
        .unwrap();
    let rec = json_ok(resp, StatusCode::CREATED);
    let id = rec["id"].as_str().unwrap().to_string();
    let names: Vec<String> = rec["photos"]
        .as_array()
        .unwrap_or_else(|| panic!("two files in one field make an array: {rec}"))
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    assert_eq!(names.len(), 2);
    assert_ne!(names[0], names[1]);
    let key = id.rsplit_once(':').unwrap().1;
    let dir = server.data_dir.join("files/acme/inspections").join(key);
    for (name, want) in names
        .iter()
        .zip([&b"first photo"[..], &b"second photo"[..]])
    {
        assert_bytes(
            download_get(&server, &id, "photos", name),
            want,
            "image/jpeg",
        );
        assert_eq!(std::fs::read(dir.join(name)).expect("stored file"), want);
    }
}

#[test]
fn file_download_needs_credential_and_rejects_traversal() {
    let server = acme();
    let form = Form::new()
        .text("record", "{}")
        .part("f", file_part(b"abc", "a.txt", "text/plain"));
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/docs")
        .multipart(form)
        .send()
        .unwrap();
    let rec = json_ok(resp, StatusCode::CREATED);
    let id = rec["id"].as_str().unwrap();
    let name = rec["f"].as_str().unwrap();
    let path = format!("/svc/file/{}/f/{}", enc(id), enc(name));
    let resp = server
        .req(Method::GET, &path)
        .header("Domain", ACME)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    for evil in [
        "../../jwt.secret",
        "..%2F..%2Fjwt.secret",
        "../../../svc.db",
    ] {
        let resp = download_get(&server, id, "f", evil);
        let status = resp.status();
        let body = resp.bytes().unwrap();
        assert!(
            status == StatusCode::NOT_FOUND || status == StatusCode::BAD_REQUEST,
            "{evil}: {status}"
        );
        assert!(!body.starts_with(b"SQLite format"));
    }
}

#[test]
fn multipart_update_replaces_file_and_merges_fields() {
    let server = acme();
    let form = Form::new()
        .text("record", json!({"title": "v1", "keep": true}).to_string())
        .part("doc", file_part(b"version one", "doc.txt", "text/plain"));
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/docs")
        .multipart(form)
        .send()
        .unwrap();
    let rec = json_ok(resp, StatusCode::CREATED);
    let id = rec["id"].as_str().unwrap().to_string();
    let form = Form::new()
        .text("record", json!({"title": "v2"}).to_string())
        .part("doc", file_part(b"version two", "doc2.txt", "text/plain"));
    let resp = server
        .admin_in(ACME, Method::PUT, &rec_path(&id))
        .multipart(form)
        .send()
        .unwrap();
    let updated = json_ok(resp, StatusCode::OK);
    assert_eq!(updated["title"], json!("v2"));
    assert_eq!(updated["keep"], json!(true));
    let name = updated["doc"]
        .as_str()
        .expect("doc holds a file name")
        .to_string();
    assert_bytes(
        download_get(&server, &id, "doc", &name),
        b"version two",
        "text/plain",
    );
}

#[test]
fn multipart_with_bad_record_part_is_400() {
    let server = acme();
    let form = Form::new()
        .text("record", "not json")
        .part("doc", file_part(b"x", "x.txt", "text/plain"));
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/docs")
        .multipart(form)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &["record"]);
    assert_eq!(server.count(ACME, "docs"), 0);
}

#[test]
fn records_keep_json_types() {
    let server = acme();
    let body = json!({
        "s": "text with spaces",
        "i": -42,
        "f": 3.5,
        "b": false,
        "n": null,
        "arr": [1, "two", {"three": 3}],
        "obj": {"nested": {"deep": [true]}},
        "unicode": "Grüße 温度",
        "big": 9007199254740993u64,
        "tiny": -0.000125,
        "empty_obj": {},
        "empty_arr": []
    });
    let rec = server.create_record(ACME, "types", &body);
    let got: Value = server.get_json(ACME, &rec_path(rec["id"].as_str().unwrap()));
    for (k, v) in body.as_object().unwrap() {
        assert_eq!(&got[k], v, "field {k}");
    }
    assert!(
        got.as_object().unwrap().contains_key("n"),
        "null field dropped"
    );
}

#[test]
fn multipart_update_mixes_stored_names_and_new_files_as_the_sdk_sends_them() {
    let server = acme();
    // The SDK's create: the record part names the file, the file part carries it.
    let form = Form::new()
        .text("record", json!({"photos": ["one.jpg"]}).to_string())
        .part("photos", file_part(b"first photo", "one.jpg", "image/jpeg"));
    let resp = server
        .admin_in(ACME, Method::POST, "/svc/inspections")
        .multipart(form)
        .send()
        .unwrap();
    let rec = json_ok(resp, StatusCode::CREATED);
    let id = rec["id"].as_str().unwrap().to_string();
    assert_eq!(rec["photos"], json!("one.jpg"));
    // The SDK's update: a list mixing the stored name and a new File, in the user's order.
    let form = Form::new()
        .text(
            "record",
            json!({"photos": ["two.jpg", "one.jpg"]}).to_string(),
        )
        .part(
            "photos",
            file_part(b"second photo", "two.jpg", "image/jpeg"),
        );
    let resp = server
        .admin_in(ACME, Method::PUT, &rec_path(&id))
        .multipart(form)
        .send()
        .unwrap();
    let updated = json_ok(resp, StatusCode::OK);
    assert_eq!(updated["photos"], json!(["two.jpg", "one.jpg"]));
    for (name, want) in [
        ("one.jpg", &b"first photo"[..]),
        ("two.jpg", &b"second photo"[..]),
    ] {
        assert_bytes(
            download_get(&server, &id, "photos", name),
            want,
            "image/jpeg",
        );
    }
    // A listed name that is neither uploaded nor stored is refused, and nothing changes.
    let form = Form::new()
        .text("record", json!({"photos": ["ghost.jpg"]}).to_string())
        .part("photos", file_part(b"third", "three.jpg", "image/jpeg"));
    let resp = server
        .admin_in(ACME, Method::PUT, &rec_path(&id))
        .multipart(form)
        .send()
        .unwrap();
    assert_error(
        resp,
        StatusCode::BAD_REQUEST,
        &["ghost.jpg", "neither uploaded nor stored"],
    );
    let again = server.get_json(ACME, &rec_path(&id));
    assert_eq!(again["photos"], json!(["two.jpg", "one.jpg"]));
    let key = id.rsplit_once(':').unwrap().1;
    let dir = server.data_dir.join("files/acme/inspections").join(key);
    assert!(
        !dir.join("three.jpg").exists(),
        "a refused update writes no file"
    );
}
