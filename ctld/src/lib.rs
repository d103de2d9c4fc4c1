//! gsctld, the gsched controller: the API server ([`server`]), the durable store ([`store`]),
//! the state machine ([`state`]) that applies every request and scheduling decision, the job
//! environment ([`env`]) and the messages to node daemons ([`dispatch`]). The scheduling
//! policy itself is the pure crate `gsched-sched`.

pub mod acct;
pub mod depend;
pub mod dispatch;
pub mod env;
pub mod group_commit;
pub mod history;
pub mod metrics;
pub mod notify;
pub mod reconfigure;
pub mod server;
pub mod smtp;
pub mod state;
pub mod steps_api;
pub mod store;
