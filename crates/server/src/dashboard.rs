//! The dashboard: a page at `/`, embedded in the binary (no CDN, no build
//! step: plain ES modules, SVG and CSS), that reads the same `/v1` API as
//! any client, with the same bearer token.
//!
//! The assets hold no data and need no token; everything the page shows
//! it fetches from the API. The page keeps the token in `sessionStorage`
//! and sends it as `Authorization: Bearer`, and it reads event streams
//! with `fetch()` (which, unlike `EventSource`, can send that header), so
//! the token is never in a URL and no cookie is set: a cross-site page
//! cannot act with the user's credentials, and every API route still
//! answers 401 without the header.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderName};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::extract::AppState;

const INDEX: &str = include_str!("../assets/dashboard/index.html");
const APP_JS: &str = include_str!("../assets/dashboard/app.js");
const STYLE: &str = include_str!("../assets/dashboard/style.css");

/// Only this origin's scripts, styles and connections: a run's text (a
/// goal, a report, a tool's arguments) is shown as text, and even markup
/// slipped into it could neither run a script nor send anything elsewhere.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (CONTENT_TYPE, content_type),
            // Small, and changed by every release: always revalidated.
            (CACHE_CONTROL, "no-cache"),
            (HeaderName::from_static("content-security-policy"), CSP),
            (HeaderName::from_static("x-content-type-options"), "nosniff"),
            (HeaderName::from_static("referrer-policy"), "no-referrer"),
        ],
        body,
    )
        .into_response()
}

/// `/` and the page's assets (under `/dashboard/`).
pub(crate) fn routes() -> axum::Router<AppState> {
    axum::Router::new()
        .route(
            "/",
            get(|| async { asset("text/html; charset=utf-8", INDEX) }),
        )
        .route(
            "/dashboard/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/dashboard/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
}
