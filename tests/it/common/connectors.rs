//! Helpers of the connector tests: create a connector, read its status, wait for a state, for
//! a tag's value (with the quality its point's status gives), and write a tag.

use super::*;

impl Server {
    /// `POST /svc/connectors` as admin in `domain`, expecting 201; the record.
    pub fn create_connector(&self, domain: &str, body: &Value) -> Value {
        let resp = self
            .admin_in(domain, Method::POST, "/svc/connectors")
            .json(body)
            .send()
            .expect("POST /svc/connectors");
        json_ok(resp, StatusCode::CREATED)
    }

    /// `GET /svc/connectors/{id}/status`.
    pub fn connector_status(&self, domain: &str, id: &str) -> Value {
        self.get_json(domain, &format!("/svc/connectors/{}/status", enc(id)))
    }

    /// The status of connector `id`'s point whose tag is `tag`.
    pub fn point_status(&self, domain: &str, id: &str, tag: &str) -> Value {
        let status = self.connector_status(domain, id);
        status["points"]
            .as_array()
            .and_then(|points| points.iter().find(|p| p["tag"] == tag))
            .cloned()
            .unwrap_or_else(|| panic!("connector {id} has no point {tag}: {status}"))
    }

    /// Waits (30 s at most) until connector `id` is in `state`; its status then.
    pub fn wait_connector(&self, domain: &str, id: &str, state: &str) -> Value {
        self.poll(
            Duration::from_secs(30),
            &format!("connector {state}"),
            || {
                let status = self.connector_status(domain, id);
                (status["state"] == state).then_some(status)
            },
        )
    }

    /// Waits (20 s at most) until tag `topic` holds a value `check` accepts: its newest
    /// `{"topic","value","timestamp"}` (`GET /svc/tag/values`) with the `quality` its
    /// connector's status gives the point.
    pub fn wait_device_tag(
        &self,
        domain: &str,
        topic: &str,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        self.poll(Duration::from_secs(20), topic, || {
            let values = self.get_json(domain, "/svc/tag/values");
            let mut newest = values
                .as_array()?
                .iter()
                .find(|v| v["topic"] == topic)?
                .clone();
            let statuses = self.get_json(domain, "/svc/connectors/status");
            newest["quality"] = statuses
                .as_array()?
                .iter()
                .flat_map(|s| s["points"].as_array().cloned().unwrap_or_default())
                .find(|p| p["tag"] == topic)?["quality"]
                .clone();
            check(&newest).then_some(newest)
        })
    }

    /// Writes `value` to tag `topic` (200 expected), then waits until the tag holds it: the
    /// device took it and it was read back.
    pub fn write_and_read_back(&self, domain: &str, topic: &str, value: Value) {
        json_ok(self.write_tag(domain, topic, value.clone()), StatusCode::OK);
        // A number by its value: a device may give 5.0 back as 5.
        self.wait_device_tag(domain, topic, |v| {
            match (v["value"].as_f64(), value.as_f64()) {
                (Some(held), Some(written)) => held == written,
                _ => v["value"] == value,
            }
        });
    }

    /// `POST /svc/tag/write {"topic","value"}` as admin in `domain`.
    pub fn write_tag(&self, domain: &str, topic: &str, value: Value) -> Response {
        self.admin_in(domain, Method::POST, "/svc/tag/write")
            .json(&json!({"topic": topic, "value": value}))
            .send()
            .expect("POST /svc/tag/write")
    }
}
