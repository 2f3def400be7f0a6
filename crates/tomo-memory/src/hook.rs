//! The `memory` hook: recall before a turn, learning after it.
//!
//! Learning is spawned as a background task and the hook returns at once, so extraction (an LLM call)
//! never delays the end of the turn or the next one. Tasks are serialized per hook (two extractions must
//! not both supersede the same fact) and counted in [`Pending`] so a caller can wait for them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use chrono::Utc;
use futures::future::BoxFuture;
use tokio::sync::watch;
use tomo_llm::LlmClient;
use tomo_plugin_api::hooks::{Hook, HookContext, HookError, TurnRecord};

use crate::embed::Embedder;
use crate::extract;
use crate::remote::RemoteMemoryClient;
use crate::store::{Fact, MemoryStore, NewFact};

/// Heading of the block this hook adds to `[memory context]`.
/// How many of the newest facts the extractor sees besides the word matches.
const RECENT_FACTS: usize = 20;

pub const HEADING: &str = "Things you remember about the user (when you learned them):";

/// Counts background memory tasks so tests and shutdown can wait for them.
#[derive(Debug)]
pub struct Pending {
    count: watch::Sender<usize>,
}

impl Default for Pending {
    fn default() -> Self {
        Self {
            count: watch::Sender::new(0),
        }
    }
}

/// Decrements the count when the task ends, even by panic.
struct PendingGuard(Arc<Pending>);

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.0.count.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl Pending {
    fn start(self: &Arc<Self>) -> PendingGuard {
        self.count.send_modify(|n| *n += 1);
        PendingGuard(Arc::clone(self))
    }

    /// Waits until no background memory task is running.
    pub async fn idle(&self) {
        let mut rx = self.count.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail while we wait.
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

// One value per hook: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Backend {
    Local {
        store: MemoryStore,
        embedder: Option<Embedder>,
        min_similarity: f32,
        llm: LlmClient,
    },
    Remote {
        client: RemoteMemoryClient,
        /// Set while the service is unreachable: the user is told once, then the hook stays quiet.
        down: Arc<AtomicBool>,
    },
}

pub(crate) struct MemoryHook {
    pub backend: Backend,
    pub limit: usize,
    pub extract: bool,
    pub skip_proactive: bool,
    pub pending: Arc<Pending>,
    /// Serializes learning tasks.
    pub learning: Arc<tokio::sync::Mutex<()>>,
    /// The user's last few utterances: "and what about her?" needs the previous turn's words to find
    /// anything, so recall searches the current words plus these.
    pub recent: Arc<std::sync::Mutex<std::collections::VecDeque<String>>>,
}

/// How many earlier user utterances join the recall query.
const RECENT_CONTEXT: usize = 2;

impl MemoryHook {
    /// The full-text query: the user's words followed by the recent context; remembers `user_text`.
    fn recall_query(&self, user_text: &str) -> String {
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut query = user_text.to_owned();
        for earlier in recent.iter().rev() {
            query.push(' ');
            query.push_str(earlier);
        }
        recent.push_back(user_text.to_owned());
        while recent.len() > RECENT_CONTEXT {
            recent.pop_front();
        }
        query
    }
}

impl Hook for MemoryHook {
    fn name(&self) -> &str {
        crate::PLUGIN_ID
    }

    fn on_before_turn(
        &self,
        user_text: String,
        ctx: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<Option<String>, HookError>> {
        let limit = self.limit;
        match &self.backend {
            _ if limit == 0 => Box::pin(async { Ok(None) }),
            Backend::Local {
                store,
                embedder,
                min_similarity,
                ..
            } => {
                let (store, embedder, min) = (store.clone(), embedder.clone(), *min_similarity);
                let query = self.recall_query(&user_text);
                Box::pin(async move {
                    let vector = embedder.as_ref().map(|e| (e, min));
                    let facts =
                        recall_local(&store, vector, &ctx.agent_id, &query, &user_text, limit)
                            .await
                            .map_err(|e| HookError(e.to_string()))?;
                    Ok(format_block(facts.iter().map(Fact::line)))
                })
            }
            Backend::Remote { client, down } => {
                let (client, down) = (client.clone(), Arc::clone(down));
                Box::pin(async move {
                    match client.search(&user_text, limit).await {
                        Ok(memories) => {
                            if down.swap(false, Ordering::SeqCst) {
                                tracing::info!(url = client.base_url(), "memory service is back");
                            }
                            Ok(format_block(memories.iter().map(|m| m.line())))
                        }
                        Err(error) => {
                            tracing::warn!(%error, "memory service unavailable; continuing without memory");
                            if down.swap(true, Ordering::SeqCst) {
                                Ok(None)
                            } else {
                                Err(HookError(format!(
                                    "{error}; continuing without long-term memory until it is back"
                                )))
                            }
                        }
                    }
                })
            }
        }
    }

    fn on_after_turn(
        &self,
        turn: Arc<TurnRecord>,
        ctx: Arc<HookContext>,
    ) -> BoxFuture<'static, Result<(), HookError>> {
        if !self.extract || (turn.proactive && self.skip_proactive) {
            return Box::pin(async { Ok(()) });
        }
        let guard = self.pending.start();
        let learning = Arc::clone(&self.learning);
        let task: BoxFuture<'static, ()> = match &self.backend {
            Backend::Local {
                store,
                embedder,
                llm,
                ..
            } => {
                let (store, embedder, llm) = (store.clone(), embedder.clone(), llm.clone());
                Box::pin(async move {
                    let _serial = learning.lock().await;
                    learn_local(&store, embedder.as_ref(), &llm, &turn, &ctx).await;
                })
            }
            Backend::Remote { client, down } => {
                let (client, down) = (client.clone(), Arc::clone(down));
                Box::pin(async move {
                    let _serial = learning.lock().await;
                    let sent = client
                        .add_exchange(
                            &turn.user_text,
                            &turn.assistant_text,
                            ctx.turn_id,
                            Utc::now(),
                        )
                        .await;
                    if let Err(error) = sent {
                        // The next recall reports the outage (once); here it is only logged.
                        tracing::warn!(%error, turn = ctx.turn_id, "memory service: exchange not stored");
                        down.store(true, Ordering::SeqCst);
                    }
                })
            }
        };
        tokio::spawn(async move {
            let _guard = guard;
            task.await;
        });
        Box::pin(async { Ok(()) })
    }
}

/// The same statement, whatever its spacing, case or final full stop.
fn same_fact(a: &str, b: &str) -> bool {
    extract::plain(a) == extract::plain(b)
}

fn format_block(lines: impl Iterator<Item = String>) -> Option<String> {
    let lines: Vec<String> = lines.collect();
    (!lines.is_empty()).then(|| format!("{HEADING}\n{}", lines.join("\n")))
}

/// Full-text matches, fused with vector matches when embeddings are configured (reciprocal rank
/// fusion: robust to the two scores having nothing in common).
pub(crate) async fn recall_local(
    store: &MemoryStore,
    vector: Option<(&Embedder, f32)>,
    agent_id: &str,
    query: &str,
    // Embeddings compare meaning: only the current utterance, or earlier topics would drown it.
    vector_query: &str,
    limit: usize,
) -> Result<Vec<Fact>, crate::store::StoreError> {
    let wide = limit.saturating_mul(3).max(limit);
    let (agent, text) = (agent_id.to_owned(), query.to_owned());
    let by_text = store
        .run(move |s| s.search_text(&agent, &text, wide))
        .await?;
    let mut by_vector = Vec::new();
    if let Some((embedder, min_similarity)) = vector {
        match embedder.embed(&[vector_query.to_owned()]).await {
            Ok(mut vectors) => {
                if let Some(vector) = vectors.pop() {
                    let agent = agent_id.to_owned();
                    by_vector = store
                        .run(move |s| s.search_vector(&agent, &vector, wide))
                        .await?
                        .into_iter()
                        .filter(|(_, score)| *score >= min_similarity)
                        .map(|(fact, _)| fact)
                        .collect();
                }
            }
            // Recall still works by words when the embeddings server is away.
            Err(error) => tracing::warn!(%error, "memory: vector search skipped"),
        }
    }
    Ok(fuse(&[by_text, by_vector], limit))
}

fn fuse(rankings: &[Vec<Fact>], limit: usize) -> Vec<Fact> {
    let mut scored: Vec<(Fact, f64)> = Vec::new();
    for ranking in rankings {
        for (rank, fact) in ranking.iter().enumerate() {
            // Ranks are small; the cast cannot lose anything that matters for ordering.
            let score = 1.0 / (60.0 + rank as f64);
            match scored.iter_mut().find(|(f, _)| f.id == fact.id) {
                Some((_, total)) => *total += score,
                None => scored.push((fact.clone(), score)),
            }
        }
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.into_iter().take(limit).map(|(f, _)| f).collect()
}

/// Extracts facts from the finished exchange and stores them. Failures are logged and skipped: memory
/// is best effort and must never break the conversation.
async fn learn_local(
    store: &MemoryStore,
    embedder: Option<&Embedder>,
    llm: &LlmClient,
    turn: &TurnRecord,
    ctx: &HookContext,
) {
    let agent_id = ctx.agent_id.clone();
    let related = {
        let (agent, text) = (
            agent_id.clone(),
            format!("{} {}", turn.user_text, turn.assistant_text),
        );
        // Words alone miss changes ("I moved to Berlin" shares no word with "lives in Paris"), so the
        // extractor also sees the most recent facts.
        let related = store
            .run(move |s| {
                let mut related = s.search_text(&agent, &text, 10)?;
                for fact in s.list(&agent, false)?.into_iter().take(RECENT_FACTS) {
                    if !related.iter().any(|f| f.id == fact.id) {
                        related.push(fact);
                    }
                }
                Ok(related)
            })
            .await;
        match related {
            Ok(related) => related,
            Err(error) => {
                tracing::warn!(%error, "memory: cannot read related facts; turn not learned");
                return;
            }
        }
    };
    let extraction =
        match extract::extract(llm, &turn.user_text, &turn.assistant_text, &related).await {
            Ok(extraction) => extraction.about_the_user(&turn.user_text, &turn.assistant_text),
            Err(error) => {
                tracing::warn!(%error, turn = ctx.turn_id, "memory: turn not learned");
                return;
            }
        };
    let mut facts: Vec<NewFact> = Vec::new();
    for text in extraction.add {
        let known = related.iter().any(|f| same_fact(&f.fact, &text))
            || facts.iter().any(|f| same_fact(&f.fact, &text));
        if !known {
            facts.push(NewFact {
                fact: text,
                supersedes: None,
                embedding: None,
            });
        }
    }
    for (id, text) in extraction.supersede {
        // Small models "supersede" a fact with itself: nothing changed, keep the original and its date.
        if related
            .iter()
            .any(|f| f.id == id && same_fact(&f.fact, &text))
        {
            continue;
        }
        // Only a current fact of this character can be replaced; anything else is a hallucinated id,
        // and the statement is still worth keeping as a new fact.
        let agent = agent_id.clone();
        let current = store
            .run(move |s| s.get(&agent, id))
            .await
            .ok()
            .flatten()
            .is_some_and(|f| f.superseded_by.is_none());
        if !current {
            tracing::warn!(
                id,
                "memory: extractor superseded an unknown fact; adding it as new"
            );
        }
        facts.push(NewFact {
            fact: text,
            supersedes: current.then_some(id),
            embedding: None,
        });
    }
    if facts.is_empty() {
        return;
    }
    if let Some(embedder) = embedder {
        let texts: Vec<String> = facts.iter().map(|f| f.fact.clone()).collect();
        match embedder.embed(&texts).await {
            Ok(vectors) => {
                for (fact, vector) in facts.iter_mut().zip(vectors) {
                    fact.embedding = Some(vector);
                }
            }
            Err(error) => tracing::warn!(%error, "memory: facts stored without vectors"),
        }
    }
    let turn_id = ctx.turn_id;
    let count = facts.len();
    match store
        .run(move |s| s.add(&agent_id, &facts, Some(turn_id), Utc::now()))
        .await
    {
        Ok(_) => tracing::debug!(count, turn = turn_id, "memory: facts stored"),
        Err(error) => tracing::warn!(%error, "memory: facts not stored"),
    }
}
