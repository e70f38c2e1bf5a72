//! The span queue: finished spans wait in a bounded channel and one exporter thread sends them
//! in batches, so a request only ever pays a non-blocking channel push. A full queue drops the
//! span (counted: `flagpole_otel_spans_dropped_total`), and so does a batch the collector did
//! not take (down, slow past the export timeout, refusing): that export is counted and logged
//! as `failures` says (a line a minute at most, never one per span).
//!
//! The SDK's batch processor does the same but keeps its drop count to itself, and its thread
//! runs exports outside the Tokio runtime the OTLP clients (tonic, reqwest) need; this thread
//! runs each export inside it (`Handle::block_on`), bounded by the export timeout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use opentelemetry::Context;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

use super::failures::Failures;

/// Spans per export at most (the OTel SDKs' default batch).
const BATCH: usize = 512;
/// How long a span may wait for a batch to fill (the SDKs' default schedule).
const DELAY: Duration = Duration::from_secs(1);

/// The Prometheus counter of spans that never reached the collector.
pub(crate) const SPANS_DROPPED: &str = "flagpole_otel_spans_dropped_total";

enum Item {
    Span(Box<SpanData>),
    /// Export everything queued, then answer.
    Flush(mpsc::Sender<()>),
    /// Export everything queued, shut the exporter down, answer and end.
    Shutdown(mpsc::Sender<()>),
}

/// A span processor exporting in batches from its own thread.
#[derive(Debug)]
pub(crate) struct Queue {
    sender: SyncSender<Item>,
    /// Whether the drop of a span for want of room was logged in this episode (reset by the
    /// next successful export).
    full_logged: std::sync::Arc<AtomicBool>,
}

impl Queue {
    /// Starts the exporter thread; `runtime` is where exports run, `failures` what records the
    /// exports that fail.
    pub(crate) fn start<E: SpanExporter + 'static>(
        exporter: E,
        capacity: usize,
        (timeout, failures): (Duration, Failures),
        runtime: tokio::runtime::Handle,
    ) -> std::io::Result<Queue> {
        let (sender, receiver) = mpsc::sync_channel(capacity);
        let full_logged = std::sync::Arc::new(AtomicBool::new(false));
        let worker = Worker {
            exporter,
            timeout,
            runtime,
            failures,
            full_logged: full_logged.clone(),
        };
        std::thread::Builder::new()
            .name("otel-export".into())
            .spawn(move || worker.run(&receiver))?;
        Ok(Queue {
            sender,
            full_logged,
        })
    }

    /// Sends a control item and waits (at most `timeout`) for the worker to answer.
    fn ask(&self, item: impl FnOnce(mpsc::Sender<()>) -> Item, timeout: Duration) -> OTelSdkResult {
        let (done, answered) = mpsc::channel();
        self.sender
            .send(item(done))
            .map_err(|_| OTelSdkError::AlreadyShutdown)?;
        answered
            .recv_timeout(timeout)
            .map_err(|_| OTelSdkError::Timeout(timeout))
    }
}

impl SpanProcessor for Queue {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        match self.sender.try_send(Item::Span(Box::new(span))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                metrics::counter!(SPANS_DROPPED).increment(1);
                if !self.full_logged.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "OpenTelemetry: the span export queue is full; spans are dropped (and counted in {SPANS_DROPPED}) until the collector catches up"
                    );
                }
            }
            // After shutdown: the process is ending.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.ask(Item::Flush, Duration::from_secs(30))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.ask(Item::Shutdown, timeout)
    }
}

struct Worker<E> {
    exporter: E,
    timeout: Duration,
    runtime: tokio::runtime::Handle,
    failures: Failures,
    full_logged: std::sync::Arc<AtomicBool>,
}

impl<E: SpanExporter> Worker<E> {
    fn run(mut self, receiver: &mpsc::Receiver<Item>) {
        let mut batch = Vec::with_capacity(BATCH);
        let mut due = Instant::now() + DELAY;
        loop {
            match receiver.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Ok(Item::Span(span)) => {
                    batch.push(*span);
                    if batch.len() >= BATCH {
                        self.export(&mut batch);
                        due = Instant::now() + DELAY;
                    }
                }
                Ok(Item::Flush(done)) => {
                    self.drain(receiver, &mut batch);
                    let _ = done.send(());
                }
                Ok(Item::Shutdown(done)) => {
                    self.drain(receiver, &mut batch);
                    let _ = self.exporter.shutdown();
                    let _ = done.send(());
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.export(&mut batch);
                    due = Instant::now() + DELAY;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.export(&mut batch);
                    return;
                }
            }
        }
    }

    /// Exports what is queued now (control items met on the way are answered: nothing else
    /// is waiting behind them).
    fn drain(&mut self, receiver: &mpsc::Receiver<Item>, batch: &mut Vec<SpanData>) {
        while let Ok(item) = receiver.try_recv() {
            match item {
                Item::Span(span) => batch.push(*span),
                Item::Flush(done) | Item::Shutdown(done) => {
                    let _ = done.send(());
                }
            }
            if batch.len() >= BATCH {
                self.export(batch);
            }
        }
        self.export(batch);
    }

    fn export(&mut self, batch: &mut Vec<SpanData>) {
        if batch.is_empty() {
            return;
        }
        let spans = std::mem::take(batch);
        let count = spans.len() as u64;
        let export = self.exporter.export(spans);
        let outcome = self
            .runtime
            .block_on(async { tokio::time::timeout(self.timeout, export).await });
        let failure = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(_) => Some(format!("no answer within {:?}", self.timeout)),
        };
        match failure {
            None => {
                self.failures.succeeded();
                self.full_logged.store(false, Ordering::Relaxed);
            }
            Some(error) => {
                metrics::counter!(SPANS_DROPPED).increment(count);
                self.failures.failed(&error);
            }
        }
    }
}
