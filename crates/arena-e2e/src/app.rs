//! A running app window and the helpers tests use on it.

use std::ffi::OsString;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, ensure, Context, Result};
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde::de::DeserializeOwned;

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

    /// The process id of tauri-driver, whose process group holds
    /// WebKitWebDriver, the app and the app's web processes.
    pub fn driver_pid(&self) -> u32 {
        self.driver.pid()
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
    /// from `check` count as "not yet"; on timeout the last check's error,
    /// if it gave one, is reported with the tail of the log.
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
    /// An element the page re-rendered between finding and reading it is
    /// found again (a few times).
    pub async fn text_of(&self, css: &str) -> Result<String> {
        let mut attempt = 0;
        loop {
            let element = self.wait_for(css).await?;
            match element.text().await {
                Ok(text) => return Ok(text),
                Err(_) if attempt < 4 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(err) => {
                    return Err(anyhow!(err))
                        .with_context(|| format!("reading the text of {css:?}"))
                }
            }
        }
    }

    /// The `textContent` of the first element matching `css` as the page is
    /// now, or `None` when nothing matches: no waiting, for the checks of
    /// [`App::wait_until`] (whose own timeout then holds).
    pub async fn text_now(&self, css: &str) -> Result<Option<String>> {
        self.js(
            "const element = document.querySelector(arguments[0]);
             return element ? element.textContent : null;",
            vec![css.into()],
        )
        .await
    }

    /// The `textContent` of the element matching `css`, waiting for it.
    /// (WebDriver's visible text skips some visible text, such as a
    /// single-line ellipsised span, in WebKit.)
    pub async fn text_content(&self, css: &str) -> Result<String> {
        let element = self.wait_for(css).await?;
        self.js(
            "return arguments[0].textContent;",
            vec![element_arg(&element)?],
        )
        .await
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

    /// Runs `script` (a function body: `return …`, the arguments in
    /// `arguments`) in the page and converts what it returns.
    pub async fn js<T: DeserializeOwned>(
        &self,
        script: &str,
        args: Vec<serde_json::Value>,
    ) -> Result<T> {
        let value = self
            .client
            .execute(script, args)
            .await
            .with_context(|| format!("running a script in the page: {}", first_line(script)))?;
        serde_json::from_value(value.clone()).with_context(|| {
            format!(
                "unexpected result {value} from the script {}",
                first_line(script)
            )
        })
    }

    /// The route part of the URL (`#/battle/…`; empty at the start page).
    pub async fn hash(&self) -> Result<String> {
        let url = self
            .client
            .current_url()
            .await
            .context("reading the window's URL")?;
        Ok(url.fragment().map(|f| format!("#{f}")).unwrap_or_default())
    }

    /// Goes to a route of the app (`#/history`) the way a link does.
    pub async fn goto(&self, hash: &str) -> Result<()> {
        ensure!(
            hash.starts_with("#/"),
            "goto({hash:?}): a route starts with #/"
        );
        self.js::<serde_json::Value>(
            "window.location.hash = arguments[0]; return null;",
            vec![hash.into()],
        )
        .await?;
        Ok(())
    }

    /// Waits for the element matching `css` and clicks it (see
    /// [`App::click_element`]).
    pub async fn click(&self, css: &str) -> Result<()> {
        let element = self.wait_for(css).await?;
        self.click_element(&element)
            .await
            .with_context(|| format!("clicking {css:?}"))
    }

    /// Scrolls `element` to the middle of the window (clear of the sticky
    /// top bar) and clicks it.
    pub async fn click_element(&self, element: &Element) -> Result<()> {
        self.scroll_to(element).await?;
        element
            .click()
            .await
            .map_err(|err| self.with_log(anyhow!("click refused: {err:?}")))
    }

    /// Scrolls `element` to the middle of the window.
    pub async fn scroll_to(&self, element: &Element) -> Result<()> {
        self.js::<serde_json::Value>(
            "arguments[0].scrollIntoView({block: 'center', inline: 'nearest'}); return null;",
            vec![element_arg(element)?],
        )
        .await?;
        Ok(())
    }

    /// Replaces the text of an input or textarea the way typing does.
    pub async fn fill(&self, element: &Element, text: &str) -> Result<()> {
        self.scroll_to(element).await?;
        element.clear().await.context("clearing a field")?;
        element
            .send_keys(text)
            .await
            .with_context(|| format!("typing {text:?}"))
    }

    /// Chooses the option of a `<select>` whose value is `value` (or, when
    /// no value matches, whose visible label is), waiting for it to be
    /// offered (options often load after the select appears). Clicks it as
    /// a user does, and checks that the select took it.
    pub async fn choose(&self, select: &Element, value: &str) -> Result<()> {
        let waited = poll_until(
            &format!("an option {value:?} in a select"),
            DEFAULT_TIMEOUT,
            || async {
                let found: Option<usize> = self
                    .js(
                        "const [select, wanted] = arguments;
                             const options = [...select.options];
                             let i = options.findIndex(o => o.value === wanted);
                             if (i < 0) i = options.findIndex(o => o.label.trim() === wanted);
                             return i < 0 ? null : i;",
                        vec![element_arg(select)?, value.into()],
                    )
                    .await?;
                Ok(found)
            },
        )
        .await;
        let option = match waited {
            Ok(index) => index,
            Err(err) => {
                let offered = self.select_options(select).await;
                return Err(self.with_log(anyhow!("{err:#}; the select offers {offered}")));
            }
        };
        self.scroll_to(select).await?;
        // `select.options` and the descendant options are both in tree
        // order (optgroups included).
        let options = select
            .find_all(Locator::Css("option"))
            .await
            .context("listing a select's options")?;
        let option = options
            .get(option)
            .ok_or_else(|| anyhow!("the select lost its option {value:?}"))?;
        option
            .click()
            .await
            .with_context(|| format!("choosing {value:?}"))?;
        let chosen: String = self
            .js(
                "const s = arguments[0]; const o = s.options[s.selectedIndex]; return o ? o.value + ' / ' + o.label : '';",
                vec![element_arg(select)?],
            )
            .await?;
        ensure!(
            chosen.split(" / ").any(|part| part.trim() == value),
            "chose {value:?} but the select shows {chosen:?}"
        );
        Ok(())
    }

    /// `value / label` of each option of a select, for error messages.
    async fn select_options(&self, select: &Element) -> String {
        let Ok(arg) = element_arg(select) else {
            return String::from("(unknown)");
        };
        self.js::<Vec<String>>(
            "return [...arguments[0].options].map(o => o.value + ' / ' + o.label);",
            vec![arg],
        )
        .await
        .map(|options| format!("{options:?}"))
        .unwrap_or_else(|err| format!("(could not list them: {err:#})"))
    }

    /// Every element matching `css` now (none is not an error).
    pub async fn find_all(&self, css: &str) -> Result<Vec<Element>> {
        self.client
            .find_all(Locator::Css(css))
            .await
            .with_context(|| format!("finding {css:?}"))
    }

    /// How many elements match `css` now.
    pub async fn count(&self, css: &str) -> Result<usize> {
        Ok(self.find_all(css).await?.len())
    }

    /// Whether an element matching `css` exists and is displayed now.
    pub async fn is_visible(&self, css: &str) -> Result<bool> {
        match self.client.find(Locator::Css(css)).await {
            Ok(element) => element
                .is_displayed()
                .await
                .with_context(|| format!("checking whether {css:?} is displayed")),
            Err(err) if err.is_no_such_element() => Ok(false),
            Err(err) => Err(anyhow!(err).context(format!("finding {css:?}"))),
        }
    }

    /// Waits until the element matching `css` has `attr` = `value`; the
    /// error says what it had instead.
    pub async fn wait_attr(
        &self,
        css: &str,
        attr: &str,
        value: &str,
        timeout: Duration,
    ) -> Result<()> {
        let seen = std::sync::Mutex::new(None::<Option<String>>);
        let waited = poll_until(
            &format!("{css} to have {attr}={value:?}"),
            timeout,
            || async {
                let element = match self.client.find(Locator::Css(css)).await {
                    Ok(element) => element,
                    Err(err) if err.is_no_such_element() => return Ok(None),
                    Err(err) => return Err(anyhow!(err)),
                };
                let current = element.attr(attr).await?;
                let matched = current.as_deref() == Some(value);
                if let Ok(mut last) = seen.lock() {
                    *last = Some(current);
                }
                Ok(matched.then_some(()))
            },
        )
        .await;
        waited.map_err(|err| {
            let last = seen.lock().ok().and_then(|s| s.clone());
            self.with_log(match last {
                Some(current) => anyhow!("{err:#}; it had {attr}={current:?}"),
                None => anyhow!("{err:#}; no element matched {css:?}"),
            })
        })
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

    /// The error followed by the tail of the log.
    pub(crate) fn with_log(&self, err: anyhow::Error) -> anyhow::Error {
        with_log(err, self.driver.log_path())
    }
}

/// An element as a script argument (`arguments[i]` in the page).
pub(crate) fn element_arg(element: &Element) -> Result<serde_json::Value> {
    serde_json::to_value(element).context("passing an element to a script")
}

fn first_line(script: &str) -> &str {
    script.lines().next().unwrap_or_default().trim()
}

/// Polls `check` every [`POLL`] until it gives `Some` or `timeout` passes.
pub(crate) async fn poll_until<T, F, Fut>(what: &str, timeout: Duration, check: F) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        // Only the last check's error is reported: one that an earlier
        // check gave, before a clean "not yet", is stale.
        let error = match check().await {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => None,
            Err(err) => Some(err),
        };
        if Instant::now() >= deadline {
            let timed_out = format!("timed out after {timeout:?} waiting for {what}");
            return Err(match error {
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
