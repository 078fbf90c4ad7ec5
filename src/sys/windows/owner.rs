//! Who owns a file, and who else may write or read it, on Windows: what
//! `trust::Seen` says of a file on Unix (its owner's uid, its mode), read
//! from the file's security descriptor, so that the journal, the stderr
//! log and the journal's key are judged by the same rules (`trust.rs`).
//!
//! - The owner is ours when it is our token's user, or the owner our
//!   token gives what we create (an elevated token's: Administrators).
//!   A uid is a number on Unix; here it is the SID's last part (its RID),
//!   ours from our token (`effective_uid`), so the judge's line names it.
//! - "Writable by others" (mode 0o022) is an allowing entry for Everyone,
//!   Authenticated Users or BUILTIN\Users that grants writing; "readable"
//!   (0o044), one that grants reading; a missing DACL grants everyone
//!   everything. Entries for other users or groups are not read: the
//!   mode says less than the ACL, never more than it grants those three.

use std::fs::File;
use std::io;
use std::os::windows::io::AsRawHandle;
use std::ptr;

use windows_sys::Win32::Foundation::{
    CloseHandle, GENERIC_ALL, GENERIC_READ, GENERIC_WRITE, HANDLE, HLOCAL, LocalFree,
};
use windows_sys::Win32::Security::Authorization::{GetSecurityInfo, SE_FILE_OBJECT};
use windows_sys::Win32::Security::{
    ACCESS_ALLOWED_ACE, ACE_HEADER, ACL, CreateWellKnownSid, DACL_SECURITY_INFORMATION, EqualSid,
    GetAce, GetSidSubAuthority, GetSidSubAuthorityCount, GetTokenInformation,
    OWNER_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID, SECURITY_MAX_SID_SIZE, TOKEN_OWNER,
    TOKEN_QUERY, TOKEN_USER, TokenOwner, TokenUser, WELL_KNOWN_SID_TYPE, WinAuthenticatedUserSid,
    WinBuiltinUsersSid, WinWorldSid,
};
use windows_sys::Win32::Storage::FileSystem::{
    FILE_APPEND_DATA, FILE_READ_DATA, FILE_TYPE_CHAR, FILE_TYPE_DISK, FILE_TYPE_PIPE,
    FILE_WRITE_DATA, GetFileType,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

use super::handle::check;
use crate::trust::{Kind, Seen};

/// winnt.h's ACCESS_ALLOWED_ACE_TYPE.
const ALLOWED: u8 = 0;
const WRITES: u32 = FILE_WRITE_DATA | FILE_APPEND_DATA | GENERIC_WRITE | GENERIC_ALL;
const READS: u32 = FILE_READ_DATA | GENERIC_READ | GENERIC_ALL;

/// What the file's security descriptor says of it.
pub fn seen(file: &File) -> io::Result<Seen> {
    let handle = file.as_raw_handle();
    // SAFETY: GetFileType only reads the handle.
    let kind = match unsafe { GetFileType(handle) } {
        FILE_TYPE_DISK => Kind::Regular,
        FILE_TYPE_CHAR => Kind::CharDevice,
        FILE_TYPE_PIPE => Kind::Fifo,
        _ => Kind::Other,
    };
    let described = Described::of(handle)?;
    let me = Token::ours()?;
    let uid = if me.owns(described.owner) {
        me.uid()
    } else {
        // SAFETY: a valid SID from the descriptor, alive with it.
        let theirs = unsafe { rid(described.owner) };
        if theirs == me.uid() { u32::MAX } else { theirs }
    };
    Ok(Seen {
        uid,
        mode: 0o600 | others(described.dacl),
        kind,
        make_private: super::MAKE_PRIVATE,
    })
}

/// Our token's user's RID: the number the judge's lines name us by.
pub fn effective_uid() -> u32 {
    Token::ours().map_or(u32::MAX, |me| me.uid())
}

/// A file's owner and DACL, pointing into a descriptor the system
/// allocated, freed on drop.
struct Described {
    owner: PSID,
    dacl: *const ACL,
    descriptor: PSECURITY_DESCRIPTOR,
}

impl Described {
    fn of(handle: HANDLE) -> io::Result<Described> {
        let (mut owner, mut dacl, mut descriptor) =
            (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        // SAFETY: an open file handle; the outputs are written and point
        // into `descriptor`, which we free.
        let error = unsafe {
            GetSecurityInfo(
                handle,
                SE_FILE_OBJECT,
                OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                &mut owner,
                ptr::null_mut(),
                &mut dacl,
                ptr::null_mut(),
                &mut descriptor,
            )
        };
        if error != 0 {
            return Err(io::Error::from_raw_os_error(error as i32));
        }
        Ok(Described {
            owner,
            dacl,
            descriptor,
        })
    }
}

impl Drop for Described {
    fn drop(&mut self) {
        // SAFETY: allocated by GetSecurityInfo with LocalAlloc.
        unsafe { LocalFree(self.descriptor as HLOCAL) };
    }
}

/// Our token's user and default owner, in buffers of their own.
struct Token {
    user: Vec<u64>,
    owner: Vec<u64>,
}

impl Token {
    fn ours() -> io::Result<Token> {
        let mut token: HANDLE = ptr::null_mut();
        // SAFETY: our own process's token, for querying.
        check(unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) })?;
        let read = |class| -> io::Result<Vec<u64>> {
            let mut buf = vec![0u64; 64];
            let mut needed = 0u32;
            // SAFETY: the token is open; the buffer is 512 bytes, aligned.
            check(unsafe {
                GetTokenInformation(token, class, buf.as_mut_ptr().cast(), 512, &mut needed)
            })?;
            Ok(buf)
        };
        let found = read(TokenUser).and_then(|user| Ok((user, read(TokenOwner)?)));
        // SAFETY: the token handle opened above.
        unsafe { CloseHandle(token) };
        let (user, owner) = found?;
        Ok(Token { user, owner })
    }

    fn user_sid(&self) -> PSID {
        // SAFETY: the buffer holds a TOKEN_USER at its start.
        unsafe { (*self.user.as_ptr().cast::<TOKEN_USER>()).User.Sid }
    }

    fn owner_sid(&self) -> PSID {
        // SAFETY: the buffer holds a TOKEN_OWNER at its start.
        unsafe { (*self.owner.as_ptr().cast::<TOKEN_OWNER>()).Owner }
    }

    fn owns(&self, owner: PSID) -> bool {
        // SAFETY: valid SIDs, alive for the call.
        !owner.is_null()
            && unsafe {
                EqualSid(owner, self.user_sid()) != 0 || EqualSid(owner, self.owner_sid()) != 0
            }
    }

    fn uid(&self) -> u32 {
        // SAFETY: our token's user SID.
        unsafe { rid(self.user_sid()) }
    }
}

/// A SID's last sub-authority (a user's or group's RID).
///
/// # Safety
/// `sid` is a valid SID.
unsafe fn rid(sid: PSID) -> u32 {
    // SAFETY: the caller's promise; the count is at least 0.
    unsafe {
        let count = *GetSidSubAuthorityCount(sid);
        match count {
            0 => 0,
            n => *GetSidSubAuthority(sid, u32::from(n) - 1),
        }
    }
}

/// The mode bits for others: what Everyone, Authenticated Users and
/// BUILTIN\Users are allowed.
fn others(dacl: *const ACL) -> u32 {
    if dacl.is_null() {
        return 0o066;
    }
    let wide: Vec<[u8; SECURITY_MAX_SID_SIZE as usize]> =
        [WinWorldSid, WinAuthenticatedUserSid, WinBuiltinUsersSid]
            .into_iter()
            .filter_map(well_known)
            .collect();
    let mut mode = 0;
    // SAFETY: a DACL from a descriptor that outlives this call.
    let count = unsafe { (*dacl).AceCount };
    for index in 0..u32::from(count) {
        let mut ace: *mut std::ffi::c_void = ptr::null_mut();
        // SAFETY: an index below the DACL's count.
        if unsafe { GetAce(dacl, index, &mut ace) } == 0 {
            continue;
        }
        // SAFETY: every ACE starts with its header.
        if unsafe { (*ace.cast::<ACE_HEADER>()).AceType } != ALLOWED {
            continue;
        }
        let allowed = ace.cast::<ACCESS_ALLOWED_ACE>();
        // SAFETY: an allowing ACE: its mask, then its SID from SidStart.
        let (mask, sid) = unsafe { ((*allowed).Mask, (&raw mut (*allowed).SidStart).cast()) };
        // SAFETY: both SIDs are valid.
        if wide
            .iter()
            .any(|w| unsafe { EqualSid(sid, w.as_ptr() as PSID) } != 0)
        {
            if mask & WRITES != 0 {
                mode |= 0o022;
            }
            if mask & READS != 0 {
                mode |= 0o044;
            }
        }
    }
    mode
}

fn well_known(kind: WELL_KNOWN_SID_TYPE) -> Option<[u8; SECURITY_MAX_SID_SIZE as usize]> {
    let mut sid = [0u8; SECURITY_MAX_SID_SIZE as usize];
    let mut size = SECURITY_MAX_SID_SIZE;
    // SAFETY: a buffer of the most a SID takes; no domain needed.
    let ok =
        unsafe { CreateWellKnownSid(kind, ptr::null_mut(), sid.as_mut_ptr().cast(), &mut size) };
    (ok != 0).then_some(sid)
}
