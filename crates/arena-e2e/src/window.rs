//! The window's size, for the layouts a test holds the app to (1280×800,
//! 1024×700), and reading where things are on the page.

use std::time::Duration;

use anyhow::{anyhow, Result};
use serde::Deserialize;

use crate::App;

/// An element's box in the viewport (CSS pixels), and its text's
/// overflow: `scroll_width > client_width` means text cut off.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Rect {
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
    pub scroll_width: f64,
    pub client_width: f64,
}

impl Rect {
    pub fn width(&self) -> f64 {
        self.right - self.left
    }

    pub fn height(&self) -> f64 {
        self.bottom - self.top
    }

    /// Whether its content is wider than its box (cut off or scrolling).
    pub fn overflows(&self) -> bool {
        self.scroll_width > self.client_width + 1.0
    }
}

const RECTS: &str = r#"
return [...document.querySelectorAll(arguments[0])].map((e) => {
  const r = e.getBoundingClientRect();
  return { left: r.left, top: r.top, right: r.right, bottom: r.bottom,
           scroll_width: e.scrollWidth, client_width: e.clientWidth };
});
"#;

impl App {
    /// Resizes the window so that the page's viewport is `width`×`height`
    /// CSS pixels (under Xvfb without a window manager the window has no
    /// frame), and waits until the page sees it.
    pub async fn resize(&self, width: u32, height: u32) -> Result<()> {
        self.client()
            .set_window_size(width, height)
            .await
            .map_err(|err| self.with_log(anyhow!(err).context("resizing the window")))?;
        self.wait_until(
            &format!("the viewport to be {width}×{height}"),
            Duration::from_secs(10),
            || async {
                let (w, h): (f64, f64) = self
                    .js("return [window.innerWidth, window.innerHeight];", vec![])
                    .await?;
                let near = |a: f64, b: u32| (a - f64::from(b)).abs() <= 2.0;
                Ok((near(w, width) && near(h, height)).then_some(()))
            },
        )
        .await
    }

    /// The boxes of every element matching `css`, in document order.
    pub async fn rects(&self, css: &str) -> Result<Vec<Rect>> {
        self.js(RECTS, vec![css.into()]).await
    }

    /// The viewport's `(width, height)` and how far the page is scrolled.
    pub async fn viewport(&self) -> Result<(f64, f64, f64)> {
        self.js(
            "return [window.innerWidth, window.innerHeight, window.scrollY];",
            vec![],
        )
        .await
    }
}
