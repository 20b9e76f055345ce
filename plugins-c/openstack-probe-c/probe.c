/*
 * openstack-probe-c: the connectivity probe of plugins-wasm/openstack-probe, written in C
 * against include/openstack_sync.h, so the ABI stays usable from a language other than Go.
 *
 * On start-up the host connects with <PREFIX>_DEFAULT_SECRET / _DEFAULT_CLOUD and calls
 * wait_for_api, which asks Keystone to validate the session's own token (HEAD v3/auth/tokens:
 * the host sends the token as caller and subject; the plugin never sees it). 401, 403 and 404
 * mean the credentials are not accepted, which waiting cannot fix: a permanent error.
 */
#include <stdio.h>

#include "openstack_sync.h"

OPENSTACK_SYNC_ABI_V1

static const char metadata_json[] =
	"{\"abi_version\":1,\"name\":\"openstack-probe-c\",\"noun\":\"connectivity probe\","
	"\"env_prefix\":\"OPENSTACK_PROBE_C\",\"probe\":true,"
	"\"version\":\"0.1.0\",\"description\":\"The connectivity probe, in C\","
	"\"source\":\"https://github.com/openstack-sync/openstack-sync/tree/main/plugins-c/openstack-probe-c\","
	"\"grants\":[{\"service\":\"identity\",\"methods\":[\"HEAD\"],\"paths\":[\"v3/auth/tokens\"]}],"
	"\"has_prune\":false}";

static const char validate_request[] =
	"{\"service\":\"identity\",\"method\":\"HEAD\",\"path\":\"v3/auth/tokens\"}";

OS_EXPORT(metadata) int32_t metadata(void) {
	os_output(metadata_json);
	return 0;
}

static int32_t refuse_version(void) {
	os_error("{\"message\":\"openstack-probe-c speaks ABI v1 only\",\"permanent\":true}");
	return 1;
}

/* after returns the text following the first occurrence of key in s, or NULL. */
static const char *after(const char *s, const char *key) {
	for (; *s; s++) {
		size_t i = 0;
		while (key[i] && s[i] == key[i]) {
			i++;
		}
		if (!key[i]) {
			return s + i;
		}
	}
	return NULL;
}

/* status reads the HTTP status of a response head {"status": N, ...}; 0 when there is none. */
static int status(const char *head) {
	const char *p = after(head, "\"status\":");
	int n = 0;
	if (!p) {
		return 0;
	}
	while (*p == ' ') {
		p++;
	}
	while (*p >= '0' && *p <= '9') {
		n = n * 10 + (*p++ - '0');
	}
	return n;
}

/* json_text copies the still-escaped contents of the JSON string that starts at p (after its
 * opening quote) into dst, so it can be placed inside another JSON string as it is. */
static void json_text(const char *p, char *dst, size_t n) {
	size_t i = 0;
	for (; p && *p && *p != '"' && i + 2 < n; p++) {
		if (*p == '\\' && p[1]) {
			dst[i++] = *p++;
		}
		dst[i++] = *p;
	}
	dst[i] = 0;
}

OS_EXPORT(wait_for_api) int32_t wait_for_api(void) {
	if (!os_abi_v1()) {
		return refuse_version();
	}
	ExtismPointer resp = openstack_request(os_store(validate_request, sizeof validate_request - 1));
	/* A head is short; a body (none for HEAD) is not needed. */
	char head[512];
	size_t n = os_load(resp, head, sizeof head - 1);
	head[n] = 0;
	char *nl = head;
	while (*nl && *nl != '\n') {
		nl++;
	}
	if (*nl != '\n') {
		/* No response: the host's error object {"error": {"message": ...}} says why. The host
		 * makes the call's error permanent itself when the session's error is. */
		char reason[400], msg[480];
		json_text(after(head, "\"message\":\""), reason, sizeof reason);
		snprintf(msg, sizeof msg, "{\"message\":\"cannot reach Keystone: %s\"}", reason);
		os_error(msg);
		return 1;
	}
	*nl = 0;
	int code = status(head);
	if (code >= 200 && code < 300) {
		return 0;
	}
	char msg[160];
	int permanent = code == 401 || code == 403 || code == 404;
	snprintf(msg, sizeof msg, "{\"message\":\"Keystone did not accept the token: HTTP %d\",\"permanent\":%s}",
		code, permanent ? "true" : "false");
	os_error(msg);
	return 1;
}

/* A probe reconciles no CRs; the host never calls this, the ABI requires it. */
OS_EXPORT(reconcile) int32_t reconcile(void) {
	os_error("{\"message\":\"openstack-probe-c reconciles no CRs\",\"permanent\":true}");
	return 1;
}
