//! Why a connection failed, as the supervisor's [`Failure`]: OPC UA status codes sorted into
//! causes (identity refused, certificates and security, timeouts, the connection, the rest).

use crate::connectors::kind::{Failure, FailureKind};
use crate::connectors::opcua::convert::status_name;
use opcua::types::StatusCode;

/// The cause a status code names.
pub fn kind_of(code: StatusCode) -> FailureKind {
    let name = status_name(code);
    match name.as_str() {
        "BadIdentityTokenRejected"
        | "BadUserAccessDenied"
        | "BadIdentityTokenInvalid"
        | "BadUserSignatureInvalid" => FailureKind::Auth,
        "BadSecurityChecksFailed"
        | "BadSecurityPolicyRejected"
        | "BadSecurityModeRejected"
        | "BadNoValidCertificates"
        | "BadApplicationSignatureInvalid"
        | "BadNonceInvalid" => FailureKind::Security,
        "BadTimeout" | "BadRequestTimeout" => FailureKind::Timeout,
        "BadCommunicationError"
        | "BadConnectionClosed"
        | "BadNotConnected"
        | "BadServerNotConnected"
        | "BadConnectionRejected"
        | "BadDisconnect"
        | "BadSecureChannelClosed" => FailureKind::Tcp,
        _ if name.starts_with("BadCertificate") => FailureKind::Security,
        _ => FailureKind::Protocol,
    }
}

/// A failure of `what` (a phrase: "connecting", "the keep-alive read") with status `code`.
pub fn from_status(code: StatusCode, what: &str) -> Failure {
    let name = status_name(code);
    let text = match kind_of(code) {
        FailureKind::Auth => format!("the server refused the user identity while {what} ({name})"),
        FailureKind::Security => format!("the secure connection failed while {what} ({name})"),
        FailureKind::Timeout => format!("the server did not answer in time while {what} ({name})"),
        FailureKind::Tcp => format!("the connection to the server failed while {what} ({name})"),
        _ => format!("the server answered {name} while {what}"),
    };
    Failure::new(kind_of(code), text).with_status(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_codes_sort_into_causes() {
        assert_eq!(kind_of(StatusCode::BadUserAccessDenied), FailureKind::Auth);
        assert_eq!(
            kind_of(StatusCode::BadIdentityTokenRejected),
            FailureKind::Auth
        );
        assert_eq!(
            kind_of(StatusCode::BadCertificateUntrusted),
            FailureKind::Security
        );
        assert_eq!(
            kind_of(StatusCode::BadSecurityPolicyRejected),
            FailureKind::Security
        );
        assert_eq!(kind_of(StatusCode::BadTimeout), FailureKind::Timeout);
        assert_eq!(kind_of(StatusCode::BadCommunicationError), FailureKind::Tcp);
        let failure = from_status(StatusCode::BadTooManySessions, "connecting");
        assert_eq!(failure.kind, FailureKind::Protocol);
        assert_eq!(failure.status_code.as_deref(), Some("BadTooManySessions"));
    }
}
