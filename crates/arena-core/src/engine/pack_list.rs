//! Pack runs as a front end lists them (the series whose prompts are a
//! pack's tasks), and a run's report saved as files: the same Markdown,
//! HTML, JSON and CSV `arena pack report` prints, each self-contained.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

use super::pack_run::{report_csv, report_html, report_markdown};
use super::Engine;

/// A pack run in a list.
#[derive(Debug, Clone, PartialEq)]
pub struct PackRunListing {
    pub series_id: String,
    /// The pack's folder.
    pub pack: PathBuf,
    pub status: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// `IDENTITY@MODEL` each.
    pub contestants: Vec<String>,
}

/// The report files of a run, one per format, in the order written.
pub const PACK_REPORT_FILES: [&str; 4] = ["report.md", "report.html", "report.json", "runs.csv"];

impl Engine {
    /// Pack runs, newest first, among the newest `limit` series (pack
    /// checks, whose contestants are the solution and the base, included).
    pub async fn pack_runs(&self, limit: usize) -> Result<Vec<PackRunListing>> {
        let series = self.series_list(limit).await?;
        Ok(series
            .into_iter()
            .filter_map(|s| {
                let pack = s
                    .request
                    .prompts
                    .iter()
                    .find_map(|p| p.task.as_ref())?
                    .pack
                    .clone();
                Some(PackRunListing {
                    series_id: s.id.clone(),
                    pack,
                    status: s.status.as_str().to_string(),
                    created_at: s.created_at,
                    contestants: s
                        .request
                        .contestants
                        .iter()
                        .map(|c| format!("{}@{}", c.identity, c.model))
                        .collect(),
                })
            })
            .collect())
    }

    /// Writes the pack run `id`'s report into `folder` (created if need
    /// be; by default `packs/reports/<id>` in the data directory) as
    /// [`PACK_REPORT_FILES`]; returns the folder and the files written.
    pub async fn write_pack_report(
        &self,
        id: &str,
        folder: Option<&Path>,
    ) -> Result<(PathBuf, Vec<PathBuf>)> {
        let report = self.pack_run_report(id).await?;
        let folder = match folder {
            Some(f) => f.to_path_buf(),
            None => self
                .data_dir()
                .join("packs")
                .join("reports")
                .join(&report.series_id),
        };
        let texts = [
            report_markdown(&report),
            report_html(&report),
            serde_json::to_string_pretty(&report)? + "\n",
            report_csv(&report),
        ];
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&folder).map_err(|e| Error::io(&folder, e))?;
            let mut written = Vec::new();
            for (name, text) in PACK_REPORT_FILES.iter().zip(texts) {
                let file = folder.join(name);
                // A fresh temporary file (created, never opened through a
                // link left there), renamed over the report.
                let mut tmp =
                    tempfile::NamedTempFile::new_in(&folder).map_err(|e| Error::io(&folder, e))?;
                std::io::Write::write_all(&mut tmp, text.as_bytes())
                    .map_err(|e| Error::io(tmp.path(), e))?;
                tmp.persist(&file).map_err(|e| Error::io(&file, e.error))?;
                written.push(file);
            }
            Ok((folder, written))
        })
        .await?
    }
}
