//! What the SDK shows around a user and a group: a user's profile, the groups it belongs to,
//! a group's members, what an administrator holds, and the keys of users.

use crate::model::{ApiKeyInfo, NamedGrant, UserProfile};
use crate::store::StoreResult;

/// Profiles and the views around users and groups.
pub trait Profiles {
    /// Replaces a user's profile (names, email, number, image).
    fn set_user_profile(&self, user_key: &str, profile: &UserProfile) -> StoreResult<()>;
    /// A user's profile (empty when never set).
    fn user_profile(&self, user_key: &str) -> StoreResult<UserProfile>;
    /// RecordIDs of the groups a user belongs to; only those of `domain` when given.
    fn user_group_ids(&self, user_key: &str, domain: Option<&str>) -> StoreResult<Vec<String>>;
    /// User RecordIDs of a group's members.
    fn group_member_ids(&self, domain: &str, group_key: &str) -> StoreResult<Vec<String>>;
    /// What an administrator holds in a domain: `read` and `read-write` on the platform's own
    /// features and every feature with custom actions, plus those actions, at scope `*`.
    fn admin_permissions(&self, domain: &str) -> StoreResult<Vec<NamedGrant>>;
    /// Every user's API keys with their owner; only those of users in a group of `domain` when
    /// given.
    fn api_keys_of_users(&self, domain: Option<&str>) -> StoreResult<Vec<ApiKeyInfo>>;
    /// The user key owning an API key (by id or bare key).
    fn api_key_user(&self, id: &str) -> StoreResult<Option<String>>;
    /// Whether the domain has the group `group_key`.
    fn group_exists(&self, domain: &str, group_key: &str) -> StoreResult<bool>;
}
