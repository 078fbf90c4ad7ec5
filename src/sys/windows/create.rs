//! Starting a process on Windows, in the one way mcp-bound does it: with
//! `CreateProcessW` and a `PROC_THREAD_ATTRIBUTE_HANDLE_LIST` that names
//! the only handles the start passes on, so that no other handle of ours,
//! inheritable or not, reaches the process. The job's helpers
//! (`job.rs`: suspended, then assigned) and the watchdog (`heir.rs`) are
//! started here.

use std::io;
use std::ptr;

use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Threading::{
    CreateProcessW, DeleteProcThreadAttributeList, EXTENDED_STARTUPINFO_PRESENT,
    InitializeProcThreadAttributeList, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, PROCESS_INFORMATION,
    STARTF_USESTDHANDLES, STARTUPINFOEXW, UpdateProcThreadAttribute,
};

use super::handle::check;

/// What to start.
pub(super) struct Start<'a> {
    /// The program's path, NUL-terminated; empty: the command line's
    /// first word.
    pub application: &'a [u16],
    /// The command line, without its NUL.
    pub line: &'a [u16],
    /// Creation flags (`EXTENDED_STARTUPINFO_PRESENT` is added).
    pub flags: u32,
    /// A Unicode environment block; None: ours.
    pub environment: Option<&'a [u16]>,
    /// Its standard input, output and error (null: none).
    pub standard: [HANDLE; 3],
}

/// Start `start` with `inherited` (inheritable, and among them the
/// standard handles that are not null) the only handles it gets.
pub(super) fn create_process(
    start: &Start<'_>,
    inherited: &[HANDLE],
) -> io::Result<PROCESS_INFORMATION> {
    let mut line: Vec<u16> = start.line.iter().copied().chain([0]).collect();
    let mut attributes = HandleList::new(inherited)?;
    let mut startup = STARTUPINFOEXW::default();
    startup.StartupInfo.cb = size_of::<STARTUPINFOEXW>() as u32;
    startup.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    [
        startup.StartupInfo.hStdInput,
        startup.StartupInfo.hStdOutput,
        startup.StartupInfo.hStdError,
    ] = start.standard;
    startup.lpAttributeList = attributes.as_ptr();
    // SAFETY: an all-zero process structure is valid.
    let mut info: PROCESS_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated application (or null) and a writable,
    // NUL-terminated command line; inheritance limited to the attribute
    // list's handles, which outlive the call; our directory.
    check(unsafe {
        CreateProcessW(
            if start.application.is_empty() {
                ptr::null()
            } else {
                start.application.as_ptr()
            },
            line.as_mut_ptr(),
            ptr::null(),
            ptr::null(),
            1,
            start.flags | EXTENDED_STARTUPINFO_PRESENT,
            start
                .environment
                .map_or(ptr::null(), |block| block.as_ptr().cast()),
            ptr::null(),
            &startup.StartupInfo,
            &mut info,
        )
    })?;
    Ok(info)
}

/// A process attribute list that names the only handles a start passes
/// on (`PROC_THREAD_ATTRIBUTE_HANDLE_LIST`), so that no other handle of
/// ours, inheritable or not, reaches the helper.
struct HandleList<'h> {
    /// The list's opaque bytes, in words for their alignment.
    words: Vec<usize>,
    handles: &'h [HANDLE],
}

impl<'h> HandleList<'h> {
    fn new(handles: &'h [HANDLE]) -> io::Result<HandleList<'h>> {
        let mut size = 0usize;
        // SAFETY: asking the size only; this call fails by design.
        unsafe { InitializeProcThreadAttributeList(ptr::null_mut(), 1, 0, &mut size) };
        let mut words = vec![0usize; size.div_ceil(size_of::<usize>())];
        // SAFETY: a buffer of the size asked for, for one attribute.
        check(unsafe {
            InitializeProcThreadAttributeList(words.as_mut_ptr().cast(), 1, 0, &mut size)
        })?;
        let mut list = HandleList { words, handles };
        // SAFETY: the list is initialised; `handles` outlives it.
        check(unsafe {
            UpdateProcThreadAttribute(
                list.as_ptr(),
                0,
                PROC_THREAD_ATTRIBUTE_HANDLE_LIST as usize,
                list.handles.as_ptr().cast(),
                size_of_val(list.handles),
                ptr::null_mut(),
                ptr::null(),
            )
        })?;
        Ok(list)
    }

    fn as_ptr(&mut self) -> *mut std::ffi::c_void {
        self.words.as_mut_ptr().cast()
    }
}

impl Drop for HandleList<'_> {
    fn drop(&mut self) {
        // SAFETY: initialised in `new` before the value existed.
        unsafe { DeleteProcThreadAttributeList(self.as_ptr()) };
    }
}
