//! Identity: users, domains, groups and their grants, custom permissions, API keys.

use crate::model::{ApiKeyInfo, Domain, Grant, Group};
use crate::store::types::{ApiKeyOwner, AuthUser, GrantSet};
use crate::store::StoreResult;

/// Who may do what: the records authentication and authorization read.
pub trait Identity {
    /// How many users exist (0 on a fresh store, when the first administrator is made).
    fn user_count(&self) -> StoreResult<u64>;
    /// Creates a user with its password hash; a taken username is a conflict.
    fn create_user(
        &self,
        username: &str,
        password_hash: &str,
        admin: bool,
    ) -> StoreResult<AuthUser>;
    /// The user with this key.
    fn user_by_key(&self, key: &str) -> StoreResult<Option<AuthUser>>;
    /// The user and its password hash, for a login attempt.
    fn user_with_password(&self, username: &str) -> StoreResult<Option<(AuthUser, String)>>;
    /// Every user.
    fn list_users(&self) -> StoreResult<Vec<AuthUser>>;
    /// Deletes a user with its memberships and API keys; false when there is no such user.
    fn delete_user(&self, key: &str) -> StoreResult<bool>;
    /// Creates a domain; a taken name is a conflict.
    fn create_domain(&self, name: &str) -> StoreResult<Domain>;
    /// Every domain.
    fn list_domains(&self) -> StoreResult<Vec<Domain>>;
    /// Creates a group of the domain with its grants; a taken name is a conflict.
    fn create_group(&self, domain: &str, name: &str, grants: &[Grant]) -> StoreResult<Group>;
    /// The groups of a domain.
    fn list_groups(&self, domain: &str) -> StoreResult<Vec<Group>>;
    /// Adds a user to a group of the domain; false when the group or the user does not exist.
    fn add_group_member(&self, domain: &str, group_key: &str, user_key: &str) -> StoreResult<bool>;
    /// Every grant a user holds in a domain.
    fn grants_of(&self, user_key: &str, domain: &str) -> StoreResult<GrantSet>;
    /// Adds custom actions per feature, and known scopes, to a domain.
    fn add_permissions(
        &self,
        domain: &str,
        actions: &[(String, String)],
        scopes: &[String],
    ) -> StoreResult<()>;
    /// The custom actions configured for a feature in a domain.
    fn custom_actions(&self, domain: &str, feature: &str) -> StoreResult<Vec<String>>;
    /// Stores a new API key of the user (its secret only as a hash), limited to `domain` when
    /// given.
    fn create_api_key(
        &self,
        user_key: &str,
        name: &str,
        prefix: &str,
        secret_hash: &str,
        domain: Option<&str>,
    ) -> StoreResult<ApiKeyInfo>;
    /// The user's API keys (never a secret).
    fn list_api_keys(&self, user_key: &str) -> StoreResult<Vec<ApiKeyInfo>>;
    /// Revokes one of the user's keys, given its id; false when the user has no such key.
    fn delete_api_key(&self, user_key: &str, id: &str) -> StoreResult<bool>;
    /// The key with this secret hash: its id, owner and domain.
    fn api_key_owner(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyOwner>>;
    /// Records that the key `key` was used at `when`.
    fn touch_api_key(&self, key: &str, when: &str) -> StoreResult<()>;
}
