//! The table of [`ROUTES`]: every route family, tried against beta's data with Alice's
//! credential, and the status svc must answer. A new route family adds its rows here.

use super::*;

/// One attempt: Alice's credential, the Domain she sends, the route, and the status svc must
/// answer (never anything carrying [`SECRET`]).
pub struct Attempt {
    pub what: &'static str,
    pub domain: &'static str,
    pub method: Method,
    pub path: String,
    pub body: Option<Value>,
    pub status: StatusCode,
}

fn attempt(
    what: &'static str,
    domain: &'static str,
    method: Method,
    path: impl Into<String>,
    body: Option<Value>,
    status: StatusCode,
) -> Attempt {
    Attempt {
        what,
        domain,
        method,
        path: path.into(),
        body,
        status,
    }
}

/// Every route family, tried against beta's data with Alice's credential.
#[allow(non_snake_case)]
pub fn ROUTES(w: &World) -> Vec<Attempt> {
    use Method as M;
    use StatusCode as S;
    let record = rec_path(&w.beta_record);
    let file = format!(
        "/svc/file/{}/doc/{}",
        enc(&w.beta_record),
        enc(&w.beta_file)
    );
    let topic = || Some(json!({"topic": BETA_TAG, "start_time": "2000-01-01T00:00:00Z"}));
    vec![
        // records, by full RecordID and by table name
        attempt("record by id", ACME, M::GET, &record, None, S::NOT_FOUND),
        attempt(
            "record update",
            ACME,
            M::PUT,
            &record,
            Some(json!({"note": "x"})),
            S::NOT_FOUND,
        ),
        attempt(
            "record delete",
            ACME,
            M::DELETE,
            &record,
            None,
            S::NOT_FOUND,
        ),
        attempt("record list", ACME, M::GET, "/svc/secrets/all", None, S::OK),
        attempt(
            "record count",
            ACME,
            M::GET,
            "/svc/secrets/count",
            None,
            S::OK,
        ),
        attempt(
            "collections",
            ACME,
            M::GET,
            "/svc/collections/all",
            None,
            S::OK,
        ),
        attempt(
            "beta's domain",
            BETA,
            M::GET,
            "/svc/secrets/all",
            None,
            S::UNAUTHORIZED,
        ),
        attempt(
            "beta's record in beta",
            BETA,
            M::GET,
            &record,
            None,
            S::UNAUTHORIZED,
        ),
        // files
        attempt("file by path", ACME, M::GET, &file, None, S::NOT_FOUND),
        attempt(
            "file by body",
            ACME,
            M::PATCH,
            "/svc/file",
            Some(json!({"fileName": w.beta_file, "collectionName": "secrets",
                        "fieldName": "doc", "recordID": w.beta_record})),
            S::NOT_FOUND,
        ),
        // tags
        attempt("tag list", ACME, M::GET, "/svc/tag/list", None, S::OK),
        attempt("tag values", ACME, M::GET, "/svc/tag/values", None, S::OK),
        attempt("tag records", ACME, M::GET, "/svc/tags/all", None, S::OK),
        attempt(
            "tag write",
            ACME,
            M::POST,
            "/svc/tag/write",
            Some(json!({"topic": BETA_TAG, "value": 666})),
            S::NOT_FOUND,
        ),
        attempt(
            "tag squat",
            ACME,
            M::POST,
            "/svc/tags",
            Some(json!({"path": BETA_TAG, "historize": true})),
            S::CONFLICT,
        ),
        attempt(
            "tag list in beta",
            BETA,
            M::GET,
            "/svc/tag/list",
            None,
            S::UNAUTHORIZED,
        ),
        // historian
        attempt(
            "historian list",
            ACME,
            M::GET,
            "/svc/historian/list",
            None,
            S::OK,
        ),
        attempt(
            "historian query",
            ACME,
            M::PATCH,
            "/svc/historian",
            topic(),
            S::NOT_FOUND,
        ),
        attempt(
            "historian last",
            ACME,
            M::PATCH,
            "/svc/historian/last",
            Some(json!({"topic": BETA_TAG, "limit": 10})),
            S::NOT_FOUND,
        ),
        attempt(
            "historian export",
            ACME,
            M::POST,
            "/svc/historian/export",
            Some(
                json!({"topics": [BETA_TAG], "startDate": "2000-01-01T00:00:00Z",
                        "endDate": "2100-01-01T00:00:00Z"}),
            ),
            S::NOT_FOUND,
        ),
        attempt(
            "historian aggregated export",
            ACME,
            M::POST,
            "/svc/historian/export/aggregated",
            Some(
                json!({"topics": [BETA_TAG], "startDate": "2000-01-01T00:00:00Z",
                        "endDate": "2100-01-01T00:00:00Z", "timezone": "UTC",
                        "sampleRate": "", "aggregation": ""}),
            ),
            S::NOT_FOUND,
        ),
        // report SQL: beta's relations do not exist in acme, physical tables are unnamable
        attempt(
            "report SQL, beta's table by its name",
            ACME,
            M::POST,
            "/svc/historian/query",
            Some(json!({"query": "SELECT * FROM secrets"})),
            S::BAD_REQUEST,
        ),
        attempt(
            "report SQL, beta's table by its storage name",
            ACME,
            M::POST,
            "/svc/historian/query",
            Some(json!({"query": "SELECT * FROM \"beta.secrets\""})),
            S::BAD_REQUEST,
        ),
        attempt(
            "report SQL, the historian's storage",
            ACME,
            M::POST,
            "/svc/historian/query",
            Some(json!({"query": "SELECT * FROM hist_points JOIN hist_series ON id = series"})),
            S::BAD_REQUEST,
        ),
        attempt(
            "report SQL, acme's historian holds no beta value",
            ACME,
            M::POST,
            "/svc/historian/query",
            Some(json!({"query": "SELECT * FROM historian"})),
            S::OK,
        ),
        attempt(
            "report SQL in beta",
            BETA,
            M::POST,
            "/svc/historian/query",
            Some(json!({"query": "SELECT * FROM secrets"})),
            S::UNAUTHORIZED,
        ),
        // users, groups, permissions of beta
        attempt(
            "users of beta",
            BETA,
            M::GET,
            "/auth/user",
            None,
            S::UNAUTHORIZED,
        ),
        attempt(
            "groups of beta",
            BETA,
            M::GET,
            "/auth/group",
            None,
            S::UNAUTHORIZED,
        ),
        attempt(
            "users via acme",
            ACME,
            M::GET,
            "/auth/user",
            None,
            S::UNAUTHORIZED,
        ),
        attempt(
            "permission check in beta",
            BETA,
            M::GET,
            "/svc/auth/permission/check/feature/collections/scope/secrets/action/read",
            None,
            S::OK,
        ),
        attempt(
            "historian in beta",
            BETA,
            M::PATCH,
            "/svc/historian",
            topic(),
            S::UNAUTHORIZED,
        ),
        // functions
        attempt(
            "function execute",
            ACME,
            M::POST,
            "/svc/processes/execute",
            Some(json!({"name": "beta_fn"})),
            S::NOT_FOUND,
        ),
        attempt(
            "function runs",
            ACME,
            M::GET,
            "/svc/processes/runs/beta_fn",
            None,
            S::NOT_FOUND,
        ),
        attempt(
            "function list",
            ACME,
            M::GET,
            "/svc/processes/domain",
            None,
            S::OK,
        ),
        attempt(
            "function code",
            ACME,
            M::GET,
            "/svc/code/beta_fn/versions",
            None,
            S::NOT_FOUND,
        ),
        attempt(
            "function in beta",
            BETA,
            M::GET,
            "/svc/processes/domain",
            None,
            S::UNAUTHORIZED,
        ),
        // flows
        attempt(
            "flow execute",
            ACME,
            M::POST,
            "/svc/flows/execute",
            Some(json!({"name": "beta_flow"})),
            S::NOT_FOUND,
        ),
        attempt(
            "flow runs",
            ACME,
            M::GET,
            "/svc/flows/beta_flow/runs",
            None,
            S::NOT_FOUND,
        ),
        attempt(
            "flow stop",
            ACME,
            M::POST,
            "/svc/flows/beta_flow/stop",
            None,
            S::NOT_FOUND,
        ),
        attempt("flow list", ACME, M::GET, "/svc/flows/all", None, S::OK),
        attempt(
            "flow in beta",
            BETA,
            M::GET,
            "/svc/flows/all",
            None,
            S::UNAUTHORIZED,
        ),
    ]
}
