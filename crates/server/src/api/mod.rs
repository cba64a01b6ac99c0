//! The `/v1` handlers and the router. Every route takes the request's
//! [`Tenant`](crate::auth::Tenant) first, so a request without a valid
//! token is refused before anything else; every route about one run loads
//! it through [`Shared::owned`](crate::Shared::owned), so another tenant's
//! run is a 404 exactly like a run that does not exist.

mod approvals;
mod extract;
mod responses;
mod router;
mod runs;
mod types;

pub(crate) use extract::{AppState, Query, RunPath};
pub(crate) use router::router;
pub(crate) use runs::page_limit;
pub use types::{
    ApiStatus, ApproveRequest, Approved, CancelRequest, Links, ListQuery, RejectRequest, Rejected,
    ResumeRequest, RunItem, RunList, RunStatusBody, SubmitRun, Submitted,
};
