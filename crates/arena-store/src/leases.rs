//! Battle leases: which process drives a battle, and the check every
//! driver's write makes that it still does.

use crate::sql::params;

use arena_domain::decisions::{self, Lease};

use crate::error::{Error, Result};
use crate::rows::{self, LeaseOf};
use crate::{Store, Tx};

impl Store {
    pub fn lease(&self, battle_id: &str) -> Result<Option<Lease>> {
        self.query(|c| rows::lease(c, battle_id))
    }
}

impl Tx<'_> {
    /// Fails with `Conflict` when another process holds the battle's lease
    /// now (see [`Store::acting_as`]); a driver's writes of a contestant's
    /// output start with it.
    pub fn require_lease(&self, battle_id: &str) -> Result<()> {
        let Some(owner) = &self.owner else {
            return Ok(());
        };
        match rows::lease(self.db(), battle_id)? {
            Some(lease) if lease.owner != **owner => Err(Error::Conflict(format!(
                "battle {battle_id} is now driven by process {} on {}; this process writes nothing more to it",
                lease.pid, lease.host
            ))),
            _ => Ok(()),
        }
    }

    /// Takes the lease if it is free (see `decisions::lease_is_free`).
    pub fn take_lease(
        &mut self,
        battle_id: &str,
        me: &Lease,
        now_ms: i64,
        pid_alive: impl Fn(u32) -> bool,
    ) -> Result<bool> {
        self.take_lease_of(LeaseOf::Battle, battle_id, me, now_ms, pid_alive)
    }

    /// Takes (or keeps) the lease on a battle or a series when it is free
    /// (see `decisions::lease_is_free`).
    pub(crate) fn take_lease_of(
        &mut self,
        of: LeaseOf,
        id: &str,
        me: &Lease,
        now_ms: i64,
        pid_alive: impl Fn(u32) -> bool,
    ) -> Result<bool> {
        // Two processes taking the same lease take turns (PostgreSQL; see
        // `Conn::lock_row`), so the second sees the first's.
        self.db().lock_row(of.owner_table(), id)?;
        let current = rows::lease_of(self.db(), of, id)?;
        if !decisions::lease_is_free(current.as_ref(), &me.owner, &me.host, now_ms, pid_alive) {
            return Ok(false);
        }
        let (table, key) = of.table();
        self.run(
            &format!(
                "INSERT INTO {table} ({key}, owner, host, pid, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT ({key}) DO UPDATE SET owner = ?2, host = ?3, pid = ?4, expires_at = ?5"
            ),
            params![id, me.owner, me.host, i64::from(me.pid), me.expires_at_ms],
        )?;
        Ok(true)
    }

    /// Extends our lease; false when someone else holds it now.
    pub fn renew_lease(
        &mut self,
        battle_id: &str,
        owner: &str,
        expires_at_ms: i64,
    ) -> Result<bool> {
        let n = self.run(
            "UPDATE live.leases SET expires_at = ?1 WHERE battle_id = ?2 AND owner = ?3",
            params![expires_at_ms, battle_id, owner],
        )?;
        Ok(n == 1)
    }

    pub fn release_lease(&mut self, battle_id: &str, owner: &str) -> Result<()> {
        self.release_lease_of(LeaseOf::Battle, battle_id, owner)
    }

    pub(crate) fn release_lease_of(&mut self, of: LeaseOf, id: &str, owner: &str) -> Result<()> {
        let (table, key) = of.table();
        self.run(
            &format!("DELETE FROM {table} WHERE {key} = ?1 AND owner = ?2"),
            params![id, owner],
        )?;
        Ok(())
    }
}
