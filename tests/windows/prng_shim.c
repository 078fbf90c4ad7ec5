/* Wine 8 has no bcryptprimitives.dll!ProcessPrng, which Rust's std
 * imports on Windows. This DLL gives it, forwarding to
 * advapi32!SystemFunction036 (RtlGenRandom). Built with MinGW into the
 * Wine prefix's system32 by .ci/windows-build; never part of mcp-bound. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    return SystemFunction036(data, (ULONG)length);
}
