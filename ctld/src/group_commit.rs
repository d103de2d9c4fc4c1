//! Group commit of submissions: many concurrent submitters share one store commit (one fsync
//! under `StateSyncMode=FULL`) while every id still leaves the controller only after its job
//! is durable.
//!
//! Why: with one commit per job, N clients submitting at once wait for N fsyncs in a row, and
//! with the API on one async thread each commit also stalls every other request. Here the
//! submit handler only queues its job and waits; one batcher task takes everything queued,
//! and on the blocking pool takes the state lock once and stores the whole batch in one
//! transaction ([`State::submit_batch`]: each job in a savepoint of its own, so a refused job
//! is refused alone). Only after the commit does any submitter of the batch get its id. While
//! a batch commits, new submissions queue for the next one, so batches grow with the load by
//! themselves: there is no waiting window, and a lone submitter is answered as soon as its
//! own commit is done.
//!
//! A submission that arrives while nothing else is queued or committing is stored at once on
//! the calling (async) thread instead: it would be a batch of one anyway, and the hop to the
//! batcher and the blocking pool cost a lone client (a user's `for` loop of `gsbatch`) about
//! a fifth of its submission rate. Whatever arrives while that commit runs is queued and
//! batched as above.
//!
//! Het jobs and arrays go through the batch too (each is one submission); `--test-only`
//! stores nothing and keeps its direct path.

use crate::server::Shared;
use crate::state::{BatchResult, Submission};
use gsched_proto::api::{ApiError, ErrorCode};
use gsched_proto::auth::Identity;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// Most submissions stored in one batch: bounds how long one batch holds the state lock.
pub const MAX_BATCH: usize = 1024;

/// One queued submission and where its answer goes.
struct Queued {
    sub: Submission,
    who: Identity,
    reply: oneshot::Sender<BatchResult>,
}

/// The handlers' end of the queue.
#[derive(Clone)]
pub struct Submitter {
    tx: mpsc::UnboundedSender<Queued>,
    /// Submissions queued or being stored (direct or batched): 0 means a new one is alone.
    busy: Arc<AtomicUsize>,
}

/// The batcher's end of the queue (given to [`run`]).
pub struct Batches {
    rx: mpsc::UnboundedReceiver<Queued>,
    busy: Arc<AtomicUsize>,
}

/// A new queue: the handlers' end and the batcher's.
pub fn channel() -> (Submitter, Batches) {
    let (tx, rx) = mpsc::unbounded_channel();
    let busy = Arc::new(AtomicUsize::new(0));
    (
        Submitter {
            tx,
            busy: busy.clone(),
        },
        Batches { rx, busy },
    )
}

/// Takes one off [`Submitter::busy`] per submission answered, also when a panic unwinds.
struct Done<'a>(&'a AtomicUsize, usize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, Ordering::AcqRel);
    }
}

fn batcher_gone() -> ApiError {
    ApiError::new(
        ErrorCode::Internal,
        "the controller's submission queue stopped; the job was not stored, submit it again",
    )
}

impl Submitter {
    /// Queues a submission and waits until its batch is committed: the job's id (with the
    /// deferral note of a plain job), or why it was refused or could not be stored.
    pub async fn submit(&self, shared: &Shared, sub: Submission, who: Identity) -> BatchResult {
        if self.busy.fetch_add(1, Ordering::AcqRel) == 0 {
            // Alone: a batch of one, stored here.
            let _done = Done(&self.busy, 1);
            let mut st = shared.lock();
            return st
                .submit_batch(vec![(sub, who)], crate::server::now())
                .pop()
                .unwrap_or_else(|| Err(batcher_gone()));
        }
        let (reply, answer) = oneshot::channel();
        if self.tx.send(Queued { sub, who, reply }).is_err() {
            self.busy.fetch_sub(1, Ordering::AcqRel);
            return Err(batcher_gone());
        }
        // A dropped reply means the batch never finished (a panic on the blocking pool):
        // nothing of it was committed.
        answer.await.unwrap_or_else(|_| Err(batcher_gone()))
    }
}

/// The batcher: forever takes whatever is queued (at most [`MAX_BATCH`]) and stores it as one
/// batch on the blocking pool, answering each submitter once the batch is committed.
pub async fn run(shared: Arc<Shared>, mut q: Batches) {
    while let Some(first) = q.rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match q.rx.try_recv() {
                Ok(x) => batch.push(x),
                Err(_) => break,
            }
        }
        let sh = shared.clone();
        let busy = q.busy.clone();
        let done = tokio::task::spawn_blocking(move || {
            let _done = Done(&busy, batch.len());
            commit_batch(&sh, batch)
        })
        .await;
        if let Err(e) = done {
            tracing::error!("a submission batch failed: {e}");
        }
    }
}

/// Stores one batch under the state lock and answers its submitters.
fn commit_batch(sh: &Shared, batch: Vec<Queued>) {
    let (items, replies): (Vec<_>, Vec<_>) =
        batch.into_iter().map(|q| ((q.sub, q.who), q.reply)).unzip();
    let n = items.len();
    let results = {
        let mut st = sh.lock();
        st.submit_batch(items, crate::server::now())
    };
    tracing::debug!("group commit: {n} submissions in one batch");
    for (reply, r) in replies.into_iter().zip(results) {
        // A submitter that went away (client disconnected) just misses its answer, as
        // with any lost reply; its job is stored.
        let _ = reply.send(r);
    }
}
