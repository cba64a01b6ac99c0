//! Bearer tokens, each bound to a tenant. A request without a token, or
//! with one the server does not know, is refused with 401 before anything
//! else is looked at. Tokens are kept as SHA-256 digests only.

use std::collections::HashMap;

use aide::OperationInput;
use aide::generate::GenContext;
use aide::openapi::Operation;
use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};

use crate::config::{LOCAL_TENANT, TokenConfig};
use crate::error::{ApiError, ErrorCode};
use crate::extract::AppState;

/// The name of the security scheme in the OpenAPI document.
pub(crate) const SCHEME: &str = "bearer";

/// The environment variable with more tokens: `tenant:token` pairs,
/// separated by commas.
pub const TOKENS_ENV: &str = "STEPWISE_SERVE_TOKENS";

/// Who may call the server.
#[derive(Clone)]
pub struct Auth {
    /// Token digest → tenant; `None`: no auth (loopback only).
    tokens: Option<HashMap<[u8; 32], String>>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.tokens {
            Some(t) => write!(f, "Auth({} tokens)", t.len()),
            None => f.write_str("Auth(none)"),
        }
    }
}

/// A token configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthError(String);

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl Auth {
    /// Tokens from `[[serve.tokens]]` and from `STEPWISE_SERVE_TOKENS`
    /// (read through `env`). Each token must be non-empty, at least 16
    /// characters, and bound to one tenant; none at all is an error (start
    /// with [`Auth::none`] to run without auth).
    pub fn from_config(
        tokens: &[TokenConfig],
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Auth, AuthError> {
        let mut pairs: Vec<(String, String, String)> = Vec::new();
        for (i, t) in tokens.iter().enumerate() {
            let what = format!("[[serve.tokens]] #{} (tenant {:?})", i + 1, t.tenant);
            let token = match (&t.token, &t.token_env) {
                (Some(token), None) => token.clone(),
                (None, Some(var)) => env(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                    AuthError(format!("{what}: the environment variable {var} is not set"))
                })?,
                _ => {
                    return Err(AuthError(format!(
                        "{what}: give exactly one of `token` and `token_env`"
                    )));
                }
            };
            pairs.push((t.tenant.clone(), token, what));
        }
        if let Some(list) = env(TOKENS_ENV) {
            for (i, item) in list.split(',').filter(|s| !s.trim().is_empty()).enumerate() {
                let what = format!("{TOKENS_ENV} entry #{}", i + 1);
                let Some((tenant, token)) = item.trim().split_once(':') else {
                    return Err(AuthError(format!("{what}: expected tenant:token")));
                };
                pairs.push((tenant.trim().to_owned(), token.trim().to_owned(), what));
            }
        }
        if pairs.is_empty() {
            return Err(AuthError(format!(
                "no bearer tokens: add [[serve.tokens]] (tenant and token_env) to stepwise.toml or set {TOKENS_ENV}=tenant:token; to try it on this machine only, --insecure-no-auth"
            )));
        }
        let mut map = HashMap::new();
        for (tenant, token, what) in pairs {
            if tenant.is_empty() {
                return Err(AuthError(format!("{what}: the tenant is empty")));
            }
            if token.chars().count() < 16 {
                return Err(AuthError(format!(
                    "{what}: the token is shorter than 16 characters"
                )));
            }
            if let Some(other) = map.insert(digest(&token), tenant.clone())
                && other != tenant
            {
                return Err(AuthError(format!(
                    "{what}: the same token is given to tenants {other:?} and {tenant:?}"
                )));
            }
        }
        Ok(Auth { tokens: Some(map) })
    }

    /// No auth: every request acts for [`LOCAL_TENANT`]. Only for a server
    /// on a loopback address (the caller checks and says so loudly).
    pub fn none() -> Auth {
        Auth { tokens: None }
    }

    /// Whether requests go unchecked.
    pub fn is_none(&self) -> bool {
        self.tokens.is_none()
    }

    /// The tenant a request's `Authorization` header acts for.
    pub(crate) fn tenant(&self, header: Option<&str>) -> Result<String, ApiError> {
        let Some(tokens) = &self.tokens else {
            return Ok(LOCAL_TENANT.to_owned());
        };
        let refused = |why: &str| ApiError::new(ErrorCode::Unauthorized, why);
        let Some(value) = header else {
            return Err(refused(
                "this server needs a bearer token: Authorization: Bearer TOKEN",
            ));
        };
        let token = match value.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
            _ => {
                return Err(refused("the Authorization header must be `Bearer TOKEN`"));
            }
        };
        tokens
            .get(&digest(token))
            .cloned()
            .ok_or_else(|| refused("this token is not valid here"))
    }
}

/// The tenant a request acts for (from its bearer token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tenant(pub(crate) String);

impl FromRequestParts<AppState> for Tenant {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let header = match parts.headers.get(AUTHORIZATION) {
            Some(v) => Some(v.to_str().map_err(|_| {
                ApiError::new(
                    ErrorCode::Unauthorized,
                    "the Authorization header is not text",
                )
            })?),
            None => None,
        };
        state.0.auth.tenant(header).map(Tenant)
    }
}

impl OperationInput for Tenant {
    fn operation_input(_ctx: &mut GenContext, operation: &mut Operation) {
        operation
            .security
            .push([(SCHEME.to_owned(), Vec::new())].into_iter().collect());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn token(tenant: &str, token: Option<&str>, env: Option<&str>) -> TokenConfig {
        TokenConfig {
            tenant: tenant.into(),
            token: token.map(str::to_owned),
            token_env: env.map(str::to_owned),
        }
    }

    #[test]
    fn tokens_map_to_their_tenants() {
        let auth = Auth::from_config(
            &[
                token("acme", Some("acme-token-0123456789"), None),
                token("globex", None, Some("GLOBEX")),
            ],
            |var| match var {
                "GLOBEX" => Some("globex-token-0123456789".into()),
                TOKENS_ENV => Some("initech:initech-token-0123456789".into()),
                _ => None,
            },
        )
        .unwrap();
        let tenant = |h: &str| auth.tenant(Some(h)).map_err(|e| e.code);
        assert_eq!(tenant("Bearer acme-token-0123456789"), Ok("acme".into()));
        assert_eq!(
            tenant("bearer globex-token-0123456789"),
            Ok("globex".into())
        );
        assert_eq!(
            tenant("Bearer initech-token-0123456789"),
            Ok("initech".into())
        );
        assert_eq!(tenant("Bearer nope"), Err(ErrorCode::Unauthorized));
        assert_eq!(
            tenant("Basic acme-token-0123456789"),
            Err(ErrorCode::Unauthorized)
        );
        assert_eq!(
            auth.tenant(None).map_err(|e| e.code),
            Err(ErrorCode::Unauthorized)
        );
        assert_eq!(Auth::none().tenant(None).unwrap(), LOCAL_TENANT);
    }

    #[test]
    fn bad_token_configurations_are_refused() {
        let none = |_: &str| None;
        assert!(Auth::from_config(&[], none).is_err());
        assert!(Auth::from_config(&[token("a", Some("short"), None)], none).is_err());
        assert!(Auth::from_config(&[token("a", None, Some("UNSET"))], none).is_err());
        assert!(Auth::from_config(&[token("a", Some("x"), Some("Y"))], none).is_err());
        let same = "the-same-token-0123456789";
        assert!(
            Auth::from_config(
                &[token("a", Some(same), None), token("b", Some(same), None)],
                none
            )
            .is_err()
        );
    }
}
