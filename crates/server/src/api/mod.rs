//! The `/v1` handlers and the router. Every route takes the request's
//! [`Tenant`](crate::auth::Tenant) first, so a request without a valid
//! token is refused before anything else; every route about one run loads
//! it through [`Shared::owned`](crate::Shared::owned), so another tenant's
//! run is a 404 exactly like a run that does not exist.

mod approvals;
mod responses;
mod router;
mod runs;

pub(crate) use crate::extract::AppState;
pub use crate::types::{
    ApiStatus, ApproveRequest, Approved, CancelRequest, Links, ListQuery, RejectRequest, Rejected,
    ResumeRequest, RunItem, RunList, RunStatusBody, SubmitRun, Submitted,
};
pub(crate) use router::router;
