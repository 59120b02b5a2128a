//! SET ROLE and SET SESSION AUTHORIZATION: who a session's statements run as.
//!
//! The authenticated role (`SessionState::user`) never changes. A superuser login may take
//! any role as its session user (SET SESSION AUTHORIZATION); a session user may then SET
//! ROLE to a role it is a member of, directly or not, inheriting or not (a superuser to
//! any). Privileges, ownership of what is created and role DDL go
//! by the result, `SessionState::current_user`. Both are settings: SET LOCAL ends with
//! the transaction, and a rolled-back transaction's SET is undone.

use super::{Session, SessionStream};
use crate::settings::Scope;
use pgerror::{codes, PgError, PgResult};

impl<S: SessionStream> Session<S> {
    /// `role`: SET ROLE (else SET SESSION AUTHORIZATION) to `value`; `None` is NONE,
    /// DEFAULT or RESET.
    pub(super) fn set_identity(
        &mut self,
        role: bool,
        value: Option<&str>,
        scope: Scope,
    ) -> PgResult<()> {
        let find = |name: &str| crate::role_ddl::find(&self.shared, name);
        let target = match value {
            // PostgreSQL's check hook reports a missing role as an invalid value.
            Some(name) => Some(find(name).ok_or_else(|| {
                PgError::new(
                    codes::INVALID_PARAMETER_VALUE,
                    format!("role \"{name}\" does not exist"),
                )
            })?),
            None => None,
        };
        let reports = if role {
            let session_user = self.state.settings.lock().get("session_authorization")?;
            let session_role = find(&session_user).ok_or_else(|| dropped(&session_user))?;
            if let Some(t) = &target {
                let member = crate::role_membership::is_member_of(
                    &self.shared.catalog,
                    &session_role,
                    t.oid,
                );
                if !session_role.superuser && !member {
                    return Err(PgError::new(
                        codes::INSUFFICIENT_PRIVILEGE,
                        format!("permission denied to set role \"{}\"", t.name),
                    ));
                }
            }
            let taken = target.as_ref().unwrap_or(&session_role);
            (self.state.settings.lock()).set_role(
                target.as_ref().map(|t| t.name.as_str()),
                taken.superuser,
                scope,
            )
        } else {
            let login = find(&self.state.user).ok_or_else(|| dropped(&self.state.user))?;
            let taken = target.unwrap_or_else(|| login.clone());
            if taken.name != login.name && !login.superuser {
                return Err(PgError::new(
                    codes::INSUFFICIENT_PRIVILEGE,
                    format!(
                        "permission denied to set session authorization \"{}\"",
                        taken.name
                    ),
                ));
            }
            (self.state.settings.lock()).set_session_authorization(
                &taken.name,
                taken.superuser,
                scope,
            )
        };
        self.state.current_user = self.state.settings.lock().current_role();
        for (name, value) in reports {
            self.report_setting(name, &value);
        }
        Ok(())
    }
}

/// The session's own role was dropped by another session.
fn dropped(name: &str) -> PgError {
    PgError::new(
        codes::UNDEFINED_OBJECT,
        format!("role \"{name}\" does not exist"),
    )
}
