//! Cross-examination of a finished battle: a persona on a model (one
//! [`turn`](super::turn)), or a CLI agent run read-only in the results
//! folder; stored and written to `cross-exam-<n>.md`. The prompts and the
//! verdict's parsing are in `crate::cross_exam`.

use rand::seq::SliceRandom;
use tokio_util::sync::CancellationToken;

use crate::agent::process;
use crate::analysis::{AnalysisStatus, Fence};
use crate::battle::{Battle, ContestantStatus};
use crate::catalog::Resolved;
use crate::cross_exam::{self, CrossExamination};
use crate::error::{Error, Invalid, Result};
use crate::provider::ChatRequest;
use crate::results;
use crate::store::Work;

use super::analyze::ask;
use super::journal::{Piece, Sink};
use super::turn::Reply;
use super::{files, lane, launch, Engine};

/// How the lane's other waiters see a cross-examination.
fn holder(battle: &Battle) -> String {
    format!("{}, cross-examination", lane::battle_name(battle))
}

/// Cross-examines a finished battle with a persona and model.
pub(super) async fn cross_examine(
    engine: &Engine,
    battle_id: &str,
    spec: &crate::battle::ContestantSpec,
    question: Option<&str>,
) -> Result<CrossExamination> {
    let battle = engine.battle(battle_id).await?;
    if !battle.status.is_terminal() {
        return Err(Error::Conflict(format!(
            "battle {battle_id} is still running; cross-examine it when it has finished"
        )));
    }
    // Agents must run read-only; refuse before anything is created.
    if let Some(backend) = crate::backend::find(&spec.identity) {
        return cross_examine_with_agent(engine, &battle, backend, spec, question).await;
    }
    let registry = engine.personas()?;
    let persona = registry
        .find(&spec.identity)
        .ok_or_else(|| Invalid::UnknownPersona {
            name: spec.identity.clone(),
            known: registry.names().join(", "),
            registry: registry.path.display().to_string(),
        })?;
    let target = engine.catalog().await.resolve(&spec.model)?;
    let done: Vec<_> = battle
        .contestants
        .iter()
        .filter(|c| c.status == ContestantStatus::Done)
        .collect();
    if done.is_empty() {
        return Err(Error::Conflict(format!(
            "battle {battle_id} has no finished results to examine"
        )));
    }
    let question = question
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .unwrap_or(cross_exam::DEFAULT_QUESTION);
    let mut x = start_cross_exam(engine, &battle, &persona.name, &target, question).await?;

    let mut order: Vec<String> = done.iter().map(|c| c.id.clone()).collect();
    order.shuffle(&mut rand::thread_rng());
    let results: Vec<(String, String)> = order
        .iter()
        .filter_map(|id| done.iter().find(|c| &c.id == id))
        .map(|c| (c.id.clone(), c.output.clone().unwrap_or_default()))
        .collect();
    let fence = Fence::new(&uuid::Uuid::new_v4().simple().to_string());
    let (system, prompt) = cross_exam::prompt(question, &battle.prompt, &results, &fence);
    let system = format!("{}\n\n{system}", persona.system_prompt);
    let req = ChatRequest {
        model: target.model.clone(),
        system: Some(system),
        history: Vec::new(),
        prompt,
        temperature: persona.temperature,
        top_p: persona.top_p,
        max_tokens: persona.max_tokens,
        no_prompt_cache: false,
    };
    let token = CancellationToken::new();
    let watch = engine.watch_work(Work::CrossExamination, &x.id, token.clone());
    let sink = Sink::cross_exam(&battle.id, &x.id);
    let answered = ask(engine, &target, req, sink, holder(&battle), 0, &token).await;
    drop(watch);
    match answered {
        Ok(Reply { text, .. }) => {
            x.verdict = cross_exam::parse_verdict(&text, &order);
            x.output = text;
            x.status = AnalysisStatus::Done;
        }
        Err(e) => {
            x.status = AnalysisStatus::Error;
            x.error = Some(e.to_string());
        }
    }
    finish_cross_exam(engine, &battle, x).await
}

/// Cross-examination by a CLI agent, run read-only in the results folder.
async fn cross_examine_with_agent(
    engine: &Engine,
    battle: &Battle,
    backend: &crate::backend::BackendInfo,
    spec: &crate::battle::ContestantSpec,
    question: Option<&str>,
) -> Result<CrossExamination> {
    let sandboxed = engine.sandboxed();
    if !crate::agent::backends::can_examine(backend.agent, sandboxed) {
        return Err(Invalid::Other(format!(
            "backend `{}` cannot be made read-only without the agent sandbox (`[limits] sandbox = \"strict\"` on a kernel with Landlock), so it cannot cross-examine; \
             use qwen, codex or claude-code, or a persona with a model",
            backend.name
        ))
        .into());
    }
    let target = engine.catalog().await.resolve(&spec.model)?;
    let endpoint = engine.agent_endpoint(&target.provider).await;
    let (endpoint, door) = launch::through_door(engine, endpoint);
    let done: Vec<_> = battle
        .contestants
        .iter()
        .filter(|c| c.status == ContestantStatus::Done)
        .collect();
    let files: Vec<(String, String)> = done
        .iter()
        .filter_map(|c| {
            let path = c.result_path.as_ref()?;
            let rel = path.strip_prefix(&battle.results_path).ok()?;
            Some((c.id.clone(), rel.to_string_lossy().into_owned()))
        })
        .collect();
    if files.is_empty() {
        return Err(Error::Conflict(format!(
            "battle {} has no finished results to examine",
            battle.id
        )));
    }
    let question = question
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .unwrap_or(cross_exam::DEFAULT_QUESTION);
    let prompt = cross_exam::agent_prompt(question, &files);
    let scratch = engine
        .data_dir()
        .join("agents")
        .join(format!("cross-exam-{}", uuid::Uuid::new_v4().simple()));
    // In the sandbox the kernel keeps it read-only, whatever its flags;
    // without one, its own read-only mode must.
    let plan = if sandboxed {
        crate::agent::backends::plan(
            crate::agent::backends::Backend::Agent(backend.agent),
            &target.model,
            &prompt,
            &battle.results_path,
            &scratch,
            endpoint.as_ref(),
        )
    } else {
        crate::agent::backends::read_only_plan(
            backend.agent,
            &target.model,
            &prompt,
            &battle.results_path,
            &scratch,
            endpoint.as_ref(),
        )
    }
    .map_err(Invalid::Other)?;
    // Read-only by the kernel: the results folder is readable, nothing but
    // its scratch folder writable.
    let connect = launch::reachable(&plan, endpoint.as_ref());
    let results = launch::Reach {
        programs: &[],
        workspace: &battle.results_path,
        writable: false,
        objects: &[],
        connect,
        door,
        own_config: &[],
        toolchains: false,
        // The results folder holds no project tree.
        environment: None,
    };
    let (launch, _scratch) = launch::prepare(engine, backend.name, plan, results, &scratch)?;

    let mut x = start_cross_exam(engine, battle, backend.name, &target, question).await?;

    // Lines go to the battle's event stream as they come.
    let (lines_tx, forward) = Sink::cross_exam(&battle.id, &x.id).forwarder(engine);
    let token = CancellationToken::new();
    let watch = engine.watch_work(Work::CrossExamination, &x.id, token.clone());
    let want = lane::Want {
        provider: target.provider.clone(),
        model: target.model.clone(),
        holder: holder(battle),
        battle_id: Some(battle.id.clone()),
        contestant_id: None,
        ready_at: engine.now(),
        position: 0,
    };
    let exit = match lane::take(engine, want, &token).await {
        Ok(Some(_slot)) => process::run(&launch, &token, |line| {
            if let process::Line::Stdout(l) = line {
                let _ = lines_tx.send(Piece::Text(format!("{l}\n")));
            }
        })
        .await
        .map_err(|e| e.to_string()),
        Ok(None) => Err(Error::Cancelled.to_string()),
        Err(e) => Err(e.to_string()),
    };
    drop(lines_tx);
    drop(watch);
    let output = forward.await?;
    match exit {
        Ok(exit) if exit.cancelled => {
            x.status = AnalysisStatus::Error;
            x.error = Some(Error::Cancelled.to_string());
        }
        Ok(exit) if exit.success() => {
            let order: Vec<String> = files.iter().map(|(id, _)| id.clone()).collect();
            x.verdict = cross_exam::parse_verdict(&output, &order);
            x.status = AnalysisStatus::Done;
        }
        Ok(exit) => {
            x.status = AnalysisStatus::Error;
            x.error = Some(exit.describe(backend.name));
        }
        Err(e) => {
            x.status = AnalysisStatus::Error;
            x.error = Some(e);
        }
    }
    x.output = output;
    finish_cross_exam(engine, battle, x).await
}

/// Records a new cross-examination (status running) and numbers it.
async fn start_cross_exam(
    engine: &Engine,
    battle: &Battle,
    identity: &str,
    target: &Resolved,
    question: &str,
) -> Result<CrossExamination> {
    let mut x = CrossExamination {
        id: uuid::Uuid::now_v7().to_string(),
        battle_id: battle.id.clone(),
        number: 0,
        identity: identity.to_string(),
        model: target.model.clone(),
        provider: target.provider.clone(),
        question: question.to_string(),
        status: AnalysisStatus::Running,
        output: String::new(),
        verdict: None,
        error: None,
        path: None,
        created_at: engine.now(),
        finished_at: None,
    };
    let (row, me) = (x.clone(), engine.inner.me.clone());
    x.number = engine
        .db(move |s| {
            s.transact(|tx| {
                let number = tx.insert_cross_examination(&row)?;
                tx.set_owner(Work::CrossExamination, &row.id, &me.host, me.pid)?;
                Ok(number)
            })
        })
        .await?;
    Ok(x)
}

/// Writes `cross-exam-<n>.md` and stores the finished cross-examination.
async fn finish_cross_exam(
    engine: &Engine,
    battle: &Battle,
    mut x: CrossExamination,
) -> Result<CrossExamination> {
    let path = results::confined(
        &battle.results_path,
        &[&format!("cross-exam-{}.md", x.number)],
    )?;
    let names = |id: &str| results::contestant_name(battle, id);
    let text = cross_exam::render(&x, &names);
    files::write_all(vec![(path.clone(), text)]).await?;
    x.path = Some(path);
    // One instant: the row stores the same end the caller gets back.
    let at = engine.now();
    x.finished_at = Some(at);
    let row = x.clone();
    engine
        .db(move |s| s.transact(|tx| tx.finish_cross_examination(&row, at)))
        .await?;
    Ok(x)
}
