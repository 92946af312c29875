//! Every rejection of SPEC §2.1, each with a clear message and nothing left
//! behind: no battle row, no results folder, no .gitignore change.

mod common;

use arena_core::battle::{BattleRequest, BattleType, ContestantSpec};
use arena_core::{Error, Invalid};
use arena_testserver::ModelScript;
use common::*;

fn specs(list: &[&str]) -> Vec<ContestantSpec> {
    list.iter()
        .map(|c| ContestantSpec::parse(c).unwrap())
        .collect()
}

async fn rejected(h: &Harness, request: BattleRequest) -> Error {
    let err = h
        .engine
        .create_battle(request)
        .await
        .expect_err("should be rejected");
    assert!(
        h.engine.battles(10).await.unwrap().is_empty(),
        "a battle row was left behind"
    );
    assert!(
        !h.project.path().join("Arena").exists(),
        "a results folder was left behind"
    );
    assert!(
        !h.project.path().join(".gitignore").exists(),
        ".gitignore was touched"
    );
    err
}

#[tokio::test]
async fn rejections_are_clear_and_leave_nothing_behind() {
    let h = Harness::new().await;
    h.local.set_model("m1", ModelScript::tokens(3));
    h.local.set_model("m2", ModelScript::tokens(3));
    let qa = |prompt: &str, list: &[&str]| BattleRequest {
        battle_type: BattleType::Qa,
        project: h.project.path().to_path_buf(),
        prompt: prompt.into(),
        contestants: specs(list),
        check_command: None,
        blind: false,
        tags: Vec::new(),
    };

    let e = rejected(&h, qa("q", &["debugger@m1"])).await;
    assert!(
        matches!(e, Error::Invalid(Invalid::ContestantCount(1))),
        "{e}"
    );
    assert!(e.to_string().contains("2 to 6 contestants, got 1"));

    let seven = [
        "debugger@m1",
        "explainer@m1",
        "architect@m1",
        "code-reviewer@m1",
        "debugger@m2",
        "explainer@m2",
        "architect@m2",
    ];
    let e = rejected(&h, qa("q", &seven)).await;
    assert!(
        matches!(e, Error::Invalid(Invalid::ContestantCount(7))),
        "{e}"
    );

    let e = rejected(&h, qa("q", &["debugger@m1", "Debugger@m1"])).await;
    assert!(
        matches!(e, Error::Invalid(Invalid::DuplicateContestant { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("appears twice"));

    let e = rejected(&h, qa("   \n", &["debugger@m1", "explainer@m1"])).await;
    assert!(matches!(e, Error::Invalid(Invalid::EmptyPrompt)), "{e}");

    let e = rejected(&h, qa("q", &["debugger@m1", "debugger@nope"])).await;
    assert!(
        matches!(e, Error::Invalid(Invalid::UnknownModel { .. })),
        "{e}"
    );
    let text = e.to_string();
    assert!(
        text.contains("unknown model `nope`") && text.contains("local serves [m1, m2]"),
        "{text}"
    );

    let e = rejected(&h, qa("q", &["debugger@m1", "poet@m1"])).await;
    assert!(
        matches!(e, Error::Invalid(Invalid::UnknownPersona { .. })),
        "{e}"
    );
    assert!(e
        .to_string()
        .contains("Debugger, Explainer, Architect, Code Reviewer"));

    let mut missing = qa("q", &["debugger@m1", "explainer@m1"]);
    missing.project = h.project.path().join("no-such-folder");
    let e = rejected(&h, missing).await;
    assert!(
        matches!(e, Error::Invalid(Invalid::ProjectMissing(_))),
        "{e}"
    );

    let coding = |list: &[&str]| BattleRequest {
        battle_type: BattleType::Coding,
        project: h.project.path().to_path_buf(),
        prompt: "fix it".into(),
        contestants: specs(list),
        check_command: None,
        blind: false,
        tags: Vec::new(),
    };
    let e = rejected(&h, coding(&["cursor@m1", "native@m1"])).await;
    assert!(
        matches!(e, Error::Invalid(Invalid::UnknownBackend { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("claude-code"));

    // Goose is in no registry this machine reaches, so it is never installed here.
    let e = rejected(&h, coding(&["goose@m1", "native@m1"])).await;
    assert!(
        matches!(e, Error::Invalid(Invalid::BackendNotInstalled { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("`goose` was not found on PATH"));

    // The harness project has a bare `.git` folder, which is not a repository.
    let e = rejected(&h, coding(&["native@m1", "native@m2"])).await;
    assert!(
        matches!(e, Error::Invalid(Invalid::NotAGitRepository(_))),
        "{e}"
    );
    assert!(e.to_string().contains("git init"));

    let e = ContestantSpec::parse("no-at-sign").unwrap_err();
    assert!(matches!(e, Invalid::ContestantSpec(_)));
    assert!(e.to_string().contains("IDENTITY@MODEL"));
}

#[tokio::test]
async fn an_unreachable_provider_is_named_in_the_error() {
    let h = Harness::new().await;
    h.local.set_model("m1", ModelScript::tokens(3));
    h.cloud.shutdown();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let request = h.request("q", &["debugger@m1", "debugger@gpt-x"]);
    let e = rejected(&h, request).await;
    let text = e.to_string();
    assert!(text.contains("cloud is unreachable"), "{text}");
}

#[tokio::test]
async fn a_broken_persona_registry_names_file_and_line() {
    let h = Harness::new().await;
    h.local.set_model("m1", ModelScript::tokens(3));
    std::fs::write(
        h.data.path().join("AGENTS.md"),
        "# mine\n\n## Critic\n- temperature: warm\nBe harsh.\n",
    )
    .unwrap();
    let e = rejected(&h, h.request("q", &["critic@m1", "critic@m1"])).await;
    match e {
        Error::Persona {
            line, ref message, ..
        } => {
            assert_eq!(line, 4);
            assert!(message.contains("temperature"));
            assert!(e.to_string().contains("AGENTS.md:4:"));
        }
        other => panic!("expected a persona error, got {other}"),
    }
}

/// The launcher asks about the project folder as it is typed or picked:
/// a relative path, a missing folder, a file, and (for Coding) a folder
/// that is not a git repository are each refused with what to do; a good
/// folder comes back canonical. A relative path is refused by battle
/// creation too, rather than read against the process's own folder.
#[tokio::test]
async fn the_project_folder_is_checked_on_its_own() {
    let h = Harness::new().await;
    let dir = h.project.path();
    let file = dir.join("notes.txt");
    std::fs::write(&file, "x").unwrap();
    let check = |p: std::path::PathBuf, t: BattleType| {
        let engine = h.engine.clone();
        async move { engine.check_project(&p, t).await }
    };
    let refused = |r: Result<std::path::PathBuf, Error>| match r {
        Err(Error::Invalid(i)) => i,
        other => panic!("refused expected, got {other:?}"),
    };
    let relative = refused(check("some/project".into(), BattleType::Qa).await);
    assert!(matches!(relative, Invalid::ProjectRelative(_)));
    assert!(relative.to_string().contains("full path"), "{relative}");
    let missing = refused(check(dir.join("gone"), BattleType::Qa).await);
    assert!(matches!(missing, Invalid::ProjectMissing(_)), "{missing}");
    let a_file = refused(check(file.clone(), BattleType::Qa).await);
    assert!(matches!(a_file, Invalid::ProjectNotAFolder(_)), "{a_file}");
    assert!(a_file.to_string().contains("is a file"), "{a_file}");
    let plain = tempfile::tempdir().unwrap();
    let not_git = refused(check(plain.path().to_path_buf(), BattleType::Coding).await);
    assert!(
        matches!(not_git, Invalid::NotAGitRepository(_)),
        "{not_git}"
    );
    assert!(not_git.to_string().contains("git init"), "{not_git}");
    // The same folder is fine for Q&A; a repository is fine for Coding.
    let ok = check(plain.path().to_path_buf(), BattleType::Qa)
        .await
        .unwrap();
    assert_eq!(ok, plain.path().canonicalize().unwrap());
    let repo = repo();
    check(repo.path().to_path_buf(), BattleType::Coding)
        .await
        .expect("a repository with a commit");

    h.local.set_model("m1", ModelScript::text("hi"));
    let mut request = BattleRequest {
        battle_type: BattleType::Qa,
        project: "relative/folder".into(),
        prompt: "q".into(),
        contestants: specs(&["debugger@m1", "explainer@m1"]),
        check_command: None,
        blind: false,
        tags: Vec::new(),
    };
    let e = rejected(&h, request.clone()).await;
    assert!(
        matches!(e, Error::Invalid(Invalid::ProjectRelative(_))),
        "{e}"
    );
    request.project = file;
    let e = rejected(&h, request).await;
    assert!(
        matches!(e, Error::Invalid(Invalid::ProjectNotAFolder(_))),
        "{e}"
    );
}
