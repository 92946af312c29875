//! A loopback listener that records every connection: markup that must
//! load nothing points at it, and a test checks that nobody came.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use tokio::io::AsyncReadExt;

/// A loopback HTTP listener that records every connection (nothing in the
/// window may ever connect to it).
pub struct Beacon {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    hits: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Beacon {
    pub async fn start() -> Result<Beacon> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the beacon listener")?;
        let url = format!("http://{}", listener.local_addr()?);
        let hits = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&hits);
        let task = tokio::spawn(async move {
            while let Ok((mut socket, peer)) = listener.accept().await {
                let mut head = vec![0u8; 512];
                let n = tokio::time::timeout(Duration::from_secs(1), socket.read(&mut head))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .unwrap_or(0);
                let first_line = String::from_utf8_lossy(&head[..n])
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_string();
                if let Ok(mut hits) = seen.lock() {
                    hits.push(format!("{peer}: {first_line}"));
                }
            }
        });
        Ok(Beacon { url, hits, task })
    }

    /// Proves the listener records a request (so that "no hits" means
    /// something), then forgets it.
    pub async fn self_test(&self) -> Result<()> {
        let addr = self.url.trim_start_matches("http://");
        let mut socket = tokio::net::TcpStream::connect(addr)
            .await
            .context("connecting to the beacon")?;
        tokio::io::AsyncWriteExt::write_all(&mut socket, b"GET /self-test HTTP/1.0\r\n\r\n")
            .await
            .context("writing to the beacon")?;
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.hits().is_empty() {
            ensure!(
                Instant::now() < deadline,
                "the beacon recorded no self-test request"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Ok(mut hits) = self.hits.lock() {
            hits.clear();
        }
        Ok(())
    }

    /// The first line of every request so far.
    pub fn hits(&self) -> Vec<String> {
        self.hits.lock().map(|h| h.clone()).unwrap_or_default()
    }
}

impl Drop for Beacon {
    fn drop(&mut self) {
        self.task.abort();
    }
}
