//! A running app window and the helpers tests use on it.

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;

use crate::driver::{log_tail, DriverProcess};
use crate::{Tools, DEFAULT_TIMEOUT};

/// How often the `wait_*` helpers look again.
const POLL: Duration = Duration::from_millis(100);
/// How long opening a session (launching the app) may take.
const SESSION_TIMEOUT: Duration = Duration::from_secs(60);
/// Log lines appended to errors.
const LOG_TAIL_LINES: usize = 40;

/// The app, launched by WebKitWebDriver through tauri-driver, with a
/// WebDriver session on its window.
///
/// Call [`App::close`] at the end of a test: it ends the session (which
/// closes the app) and stops the drivers. Dropping an `App` without closing
/// it (a failed test) stops the whole driver process group, the app included.
pub struct App {
    client: Client,
    // Dropped after `client`.
    driver: DriverProcess,
    target_dir: PathBuf,
}

impl App {
    pub(crate) async fn launch(
        tools: &Tools,
        env: &[(OsString, OsString)],
        log: &Path,
    ) -> Result<App> {
        let mut driver = DriverProcess::spawn(tools, env, log)?;
        if let Err(err) = driver.wait_ready().await {
            return Err(with_log(err, driver.log_path()));
        }

        let mut caps = serde_json::Map::new();
        caps.insert(
            "tauri:options".into(),
            serde_json::json!({ "application": tools.app }),
        );
        let mut builder = ClientBuilder::new(HttpConnector::new());
        builder.capabilities(caps);
        // WebKitWebDriver waits for ever for an app that never connects (one
        // that crashed at start-up, say), hence the time limit.
        let connected = tokio::time::timeout(SESSION_TIMEOUT, builder.connect(&driver.url())).await;
        let client = match connected {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(err)) => Err(anyhow!(err)),
            Err(_) => Err(anyhow!("no session after {SESSION_TIMEOUT:?}")),
        }
        .map_err(|err| {
            with_log(
                err.context(format!(
                    "opening a WebDriver session on {} (launching {})",
                    driver.url(),
                    tools.app.display()
                )),
                driver.log_path(),
            )
        })?;
        Ok(App {
            client,
            driver,
            target_dir: tools.target_dir.clone(),
        })
    }

    /// The WebDriver client, for anything the helpers don't cover.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The log of this run: tauri-driver, WebKitWebDriver and the app's stderr.
    pub fn log_path(&self) -> &Path {
        self.driver.log_path()
    }

    /// The last lines of the log.
    pub fn log_tail(&self) -> String {
        log_tail(self.driver.log_path(), LOG_TAIL_LINES)
    }

    /// Polls `check` until it gives `Some`, for at most `timeout`. Errors
    /// from `check` count as "not yet"; the last one is reported on timeout,
    /// with the tail of the log.
    pub async fn wait_until<T, F, Fut>(&self, what: &str, timeout: Duration, check: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Option<T>>>,
    {
        poll_until(what, timeout, check)
            .await
            .map_err(|err| self.with_log(err))
    }

    /// The visible text of the whole page.
    pub async fn page_text(&self) -> Result<String> {
        let body = self
            .client
            .find(Locator::Css("body"))
            .await
            .context("finding <body>")?;
        body.text().await.context("reading the page text")
    }

    /// Waits (default timeout) until the page's visible text contains `text`.
    pub async fn wait_for_text(&self, text: &str) -> Result<()> {
        self.wait_for_text_within(text, DEFAULT_TIMEOUT).await
    }

    /// Waits until the page's visible text contains `text`.
    pub async fn wait_for_text_within(&self, text: &str, timeout: Duration) -> Result<()> {
        let last_seen = std::sync::Mutex::new(String::new());
        let waited = poll_until(&format!("the text {text:?}"), timeout, || async {
            let page = self.page_text().await?;
            let found = page.contains(text);
            if let Ok(mut seen) = last_seen.lock() {
                *seen = page;
            }
            Ok(found.then_some(()))
        })
        .await;
        waited.map_err(|err| {
            let seen = last_seen.lock().map(|s| s.clone()).unwrap_or_default();
            self.with_log(anyhow!("{err:#}; the page showed: {seen:?}"))
        })
    }

    /// Waits (default timeout) for an element matching `css`.
    pub async fn wait_for(&self, css: &str) -> Result<Element> {
        self.wait_for_locator(Locator::Css(css), DEFAULT_TIMEOUT)
            .await
    }

    /// Waits for an element matching `locator`.
    pub async fn wait_for_locator(
        &self,
        locator: Locator<'_>,
        timeout: Duration,
    ) -> Result<Element> {
        self.wait_until(&format!("the element {locator:?}"), timeout, || async {
            match self.client.find(locator).await {
                Ok(element) => Ok(Some(element)),
                Err(err) if err.is_no_such_element() => Ok(None),
                Err(err) => Err(anyhow!(err)),
            }
        })
        .await
    }

    /// Waits for an element matching `css` and returns its visible text.
    pub async fn text_of(&self, css: &str) -> Result<String> {
        let element = self.wait_for(css).await?;
        element
            .text()
            .await
            .with_context(|| format!("reading the text of {css:?}"))
    }

    /// The text of the `<dd>` that follows the `<dt>` reading `term` (a
    /// definition list such as the app-info card), waiting for it.
    pub async fn definition(&self, term: &str) -> Result<String> {
        if term.contains('"') {
            bail!("definition(): a term with a double quote is not supported: {term:?}");
        }
        let xpath = format!("//dt[normalize-space()=\"{term}\"]/following-sibling::dd[1]");
        let element = self
            .wait_for_locator(Locator::XPath(&xpath), DEFAULT_TIMEOUT)
            .await?;
        let text = element
            .text()
            .await
            .with_context(|| format!("reading the value of {term:?}"))?;
        Ok(text.trim().to_string())
    }

    /// Saves a PNG screenshot of the window to
    /// `target/e2e-screenshots/<name>.png` and returns its path.
    pub async fn screenshot(&self, name: &str) -> Result<PathBuf> {
        let png = self
            .client
            .screenshot()
            .await
            .map_err(|err| self.with_log(anyhow!(err).context("taking a screenshot")))?;
        if !png.starts_with(b"\x89PNG\r\n\x1a\n") {
            bail!("the screenshot is not a PNG ({} bytes)", png.len());
        }
        let dir = crate::screenshot_dir(&self.target_dir);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, &png).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// Ends the session (WebKitWebDriver closes the app) and stops the drivers.
    pub async fn close(self) -> Result<()> {
        let App { client, driver, .. } = self;
        let closed = client.close().await;
        // The app has had its chance to exit cleanly; stop whatever is left.
        let log = driver.log_path().to_path_buf();
        drop(driver);
        closed.map_err(|err| with_log(anyhow!(err).context("ending the WebDriver session"), &log))
    }

    fn with_log(&self, err: anyhow::Error) -> anyhow::Error {
        with_log(err, self.driver.log_path())
    }
}

/// Polls `check` every [`POLL`] until it gives `Some` or `timeout` passes.
async fn poll_until<T, F, Fut>(what: &str, timeout: Duration, check: F) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = Instant::now() + timeout;
    let mut last_error = None;
    loop {
        match check().await {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => {}
            Err(err) => last_error = Some(err),
        }
        if Instant::now() >= deadline {
            let timed_out = format!("timed out after {timeout:?} waiting for {what}");
            return Err(match last_error {
                Some(err) => err.context(timed_out),
                None => anyhow!(timed_out),
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The error (its whole chain on one line) followed by the tail of the log.
fn with_log(err: anyhow::Error, log: &Path) -> anyhow::Error {
    anyhow!(
        "{err:#}\n--- {} ends with:\n{}\n---",
        log.display(),
        log_tail(log, LOG_TAIL_LINES)
    )
}
