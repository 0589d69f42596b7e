/* Optional C accelerator for the codec's slowest record: GroupMetadataValue.

   decode_group_metadata_value(value: bytes) -> dict | None

   Decodes a whole GroupMetadataValue (the INT16 version prefix included, versions 0-4)
   and, when the protocol type is "consumer", each member's embedded
   ConsumerProtocolSubscription / ConsumerProtocolAssignment, into exactly the objects
   the pure-Python decoder returns (services/codec/compiler.py's fast decoders, then
   embedded.py's decode_member_protocols): the same keys in the same order, the same
   defaults and leniency (newer embedded versions read by their known prefix, older
   layouts that end exactly at the end, zero-length data).

   It returns None, never raises, for anything it does not decode to the letter:
   truncation, bad lengths, invalid UTF-8, trailing bytes, an unknown version, tagged
   fields, a member's embedded data that does not decode, a non-bytes argument, or a
   failed allocation. The caller then runs the pure-Python decoder, which makes the
   proper DecodeError (field and byte offset) or the member's {"raw", "error"} object.

   Wire rules: Kafka's Readable / ByteUtils (big-endian fixed widths; in flexible
   versions, compact lengths are UNSIGNED_VARINT + 1). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Outcome of one read. FAIL: the pure-Python fast decoder fails on these bytes too (so
   an older embedded layout may be tried). BAIL: not decoded here for another reason
   (tagged fields, an allocation failure): the caller must fall back. */
enum { OK = 0, FAIL = 1, BAIL = 2 };

#define HIGHEST_EMBEDDED 3 /* ConsumerProtocol{Subscription,Assignment} v0-v3 */
#define HIGHEST_GROUP 4    /* GroupMetadataValue v0-v4; v4 is flexible */

typedef struct {
    const unsigned char *b;
    Py_ssize_t n; /* end of the buffer */
    Py_ssize_t p; /* read position */
} Reader;

/* Interned dict keys, made once at import. */
static PyObject *k_version, *k_topics, *k_user_data, *k_owned_partitions, *k_generation_id,
    *k_rack_id, *k_raw, *k_topic, *k_partitions, *k_assigned_partitions, *k_protocol_type,
    *k_generation, *k_protocol, *k_leader, *k_current_state_timestamp, *k_members,
    *k_member_id, *k_group_instance_id, *k_client_id, *k_client_host, *k_rebalance_timeout,
    *k_session_timeout, *k_subscription, *k_assignment;

/* -- primitive reads ------------------------------------------------------------------ */

static inline int
read_i16(Reader *r, int64_t *out)
{
    if (r->n - r->p < 2)
        return FAIL;
    const unsigned char *s = r->b + r->p;
    *out = (int16_t)(uint16_t)((s[0] << 8) | s[1]);
    r->p += 2;
    return OK;
}

static inline int
read_i32(Reader *r, int64_t *out)
{
    if (r->n - r->p < 4)
        return FAIL;
    const unsigned char *s = r->b + r->p;
    *out = (int32_t)(((uint32_t)s[0] << 24) | ((uint32_t)s[1] << 16) | ((uint32_t)s[2] << 8) |
                     (uint32_t)s[3]);
    r->p += 4;
    return OK;
}

static inline int
read_i64(Reader *r, int64_t *out)
{
    if (r->n - r->p < 8)
        return FAIL;
    const unsigned char *s = r->b + r->p;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | s[i];
    *out = (int64_t)v;
    r->p += 8;
    return OK;
}

/* compiler.read_uvarint: at most 5 bytes, 7 bits each, low group first. */
static inline int
read_uvarint(Reader *r, int64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 5; i++) {
        if (r->p >= r->n)
            return FAIL;
        unsigned char byte = r->b[r->p++];
        v |= (uint64_t)(byte & 0x7F) << (7 * i);
        if (byte < 0x80) {
            *out = (int64_t)v;
            return OK;
        }
    }
    return FAIL;
}

/* A string, bytes or array length: INT16 or INT32 in classic versions, UNSIGNED_VARINT - 1
   in flexible ones. As the Python decoders check it: at least -1 if nullable (null), else
   0, and `length * unit` no more than the bytes left. */
static inline int
read_length(Reader *r, int flexible, int width, int nullable, int64_t unit, int64_t *out)
{
    int64_t len;
    int rc;
    if (flexible) {
        rc = read_uvarint(r, &len);
        len -= 1;
    }
    else {
        rc = width == 2 ? read_i16(r, &len) : read_i32(r, &len);
    }
    if (rc != OK)
        return rc;
    if (len < (nullable ? -1 : 0) || len * unit > (int64_t)(r->n - r->p))
        return FAIL;
    *out = len;
    return OK;
}

/* After a failed Python call: invalid UTF-8 fails the Python decoder too; anything else
   (memory) is not ours to judge. */
static int
python_failure(void)
{
    int rc = PyErr_ExceptionMatches(PyExc_UnicodeDecodeError) ? FAIL : BAIL;
    PyErr_Clear();
    return rc;
}

/* Topic names repeat in every member's subscription and assignment: the last few are
   kept and shared (str is immutable). Only ASCII strings are kept, so equal bytes mean
   an equal decode. */
#define TOPIC_CACHE 8
static PyObject *topic_cache[TOPIC_CACHE];
static unsigned topic_cache_next;

static PyObject *
decode_topic(const unsigned char *data, Py_ssize_t len)
{
    for (int i = 0; i < TOPIC_CACHE; i++) {
        PyObject *known = topic_cache[i];
        if (known != NULL && PyUnicode_GET_LENGTH(known) == len &&
            memcmp(PyUnicode_1BYTE_DATA(known), data, (size_t)len) == 0)
            return Py_NewRef(known);
    }
    PyObject *s = PyUnicode_DecodeUTF8((const char *)data, len, NULL);
    if (s != NULL && PyUnicode_IS_ASCII(s))
        Py_XSETREF(topic_cache[topic_cache_next++ % TOPIC_CACHE], Py_NewRef(s));
    return s;
}

/* A string; `topic`: one of the embedded protocol's topic names, maybe cached. */
static int
read_string(Reader *r, int flexible, int nullable, int topic, PyObject **out)
{
    int64_t len;
    int rc = read_length(r, flexible, 2, nullable, 1, &len);
    if (rc != OK)
        return rc;
    if (len < 0) {
        *out = Py_NewRef(Py_None);
        return OK;
    }
    const unsigned char *data = r->b + r->p;
    PyObject *s = topic ? decode_topic(data, (Py_ssize_t)len)
                        : PyUnicode_DecodeUTF8((const char *)data, (Py_ssize_t)len, NULL);
    if (s == NULL)
        return python_failure();
    r->p += (Py_ssize_t)len;
    *out = s;
    return OK;
}

static int
read_bytes(Reader *r, int flexible, int nullable, PyObject **out)
{
    int64_t len;
    int rc = read_length(r, flexible, 4, nullable, 1, &len);
    if (rc != OK)
        return rc;
    if (len < 0) {
        *out = Py_NewRef(Py_None);
        return OK;
    }
    PyObject *s = PyBytes_FromStringAndSize((const char *)r->b + r->p, (Py_ssize_t)len);
    if (s == NULL)
        return python_failure();
    r->p += (Py_ssize_t)len;
    *out = s;
    return OK;
}

/* dict[key] = value, stealing the reference to value (NULL: a failed allocation). */
static inline int
put(PyObject *dict, PyObject *key, PyObject *value)
{
    if (value == NULL)
        return python_failure();
    int failed = PyDict_SetItem(dict, key, value);
    Py_DECREF(value);
    return failed ? python_failure() : OK;
}

/* dict[key] = what `read_call` stored in `_v` (the call names `&_v` as its output). */
#define PUT_READ(dict, key, read_call)         \
    do {                                       \
        PyObject *_v = NULL;                   \
        int _rc = (read_call);                 \
        if (_rc != OK)                         \
            return _rc;                        \
        if ((_rc = put(dict, key, _v)) != OK)  \
            return _rc;                        \
    } while (0)

#define CHECK(call)              \
    do {                         \
        int _rc = (call);        \
        if (_rc != OK)           \
            return _rc;          \
    } while (0)

/* -- the embedded consumer protocol (never flexible) ------------------------------------ */

typedef int (*ItemReader)(Reader *, PyObject **);

/* An array (INT32 count) as a list; `unit`: the least bytes one item takes. */
static int
read_array(Reader *r, int64_t unit, ItemReader read_item, PyObject **out)
{
    int64_t count;
    CHECK(read_length(r, 0, 4, 0, unit, &count));
    PyObject *list = PyList_New((Py_ssize_t)count);
    if (list == NULL)
        return python_failure();
    for (Py_ssize_t i = 0; i < (Py_ssize_t)count; i++) {
        PyObject *item = NULL;
        int rc = read_item(r, &item);
        if (rc != OK) {
            Py_DECREF(list);
            return rc;
        }
        PyList_SET_ITEM(list, i, item);
    }
    *out = list;
    return OK;
}

static int
read_int32_item(Reader *r, PyObject **out)
{
    int64_t value;
    CHECK(read_i32(r, &value));
    *out = PyLong_FromLongLong(value);
    return *out == NULL ? python_failure() : OK;
}

/* One of the embedded protocol's topic names. */
static int
read_topic(Reader *r, PyObject **out)
{
    return read_string(r, 0, 0, 1, out);
}

/* TopicPartition: {"topic": str, "partitions": [int]}. */
static int
read_topic_partition(Reader *r, PyObject **out)
{
    PyObject *tp = PyDict_New();
    if (tp == NULL)
        return python_failure();
    PyObject *v = NULL;
    int rc;
    if ((rc = read_topic(r, &v)) == OK && (rc = put(tp, k_topic, v)) == OK &&
        (rc = read_array(r, 4, read_int32_item, &v)) == OK)
        rc = put(tp, k_partitions, v);
    if (rc != OK) {
        Py_DECREF(tp);
        return rc;
    }
    *out = tp;
    return OK;
}

/* The fields of ConsumerProtocolSubscription at schema version `v`, in the spec's order,
   with their defaults where `v` lacks them (v = -1: zero-length data, none present). */
static int
subscription_fields(Reader *r, int v, PyObject *d)
{
    int64_t generation_id = -1;
    if (v >= 0) {
        PUT_READ(d, k_topics, read_array(r, 1, read_topic, &_v));
        PUT_READ(d, k_user_data, read_bytes(r, 0, 1, &_v));
    }
    else {
        CHECK(put(d, k_topics, PyList_New(0)));
        CHECK(put(d, k_user_data, Py_NewRef(Py_None)));
    }
    if (v >= 1)
        PUT_READ(d, k_owned_partitions, read_array(r, 1, read_topic_partition, &_v));
    else
        CHECK(put(d, k_owned_partitions, PyList_New(0)));
    if (v >= 2)
        CHECK(read_i32(r, &generation_id));
    CHECK(put(d, k_generation_id, PyLong_FromLongLong(generation_id)));
    if (v >= 3)
        PUT_READ(d, k_rack_id, read_string(r, 0, 1, 0, &_v));
    else
        CHECK(put(d, k_rack_id, Py_NewRef(Py_None)));
    return OK;
}

/* ConsumerProtocolAssignment: the same fields in v0-v3 (v = -1: none present). */
static int
assignment_fields(Reader *r, int v, PyObject *d)
{
    if (v < 0) {
        CHECK(put(d, k_assigned_partitions, PyList_New(0)));
        return put(d, k_user_data, Py_NewRef(Py_None));
    }
    PUT_READ(d, k_assigned_partitions, read_array(r, 1, read_topic_partition, &_v));
    PUT_READ(d, k_user_data, read_bytes(r, 0, 1, &_v));
    return OK;
}

typedef int (*FieldsReader)(Reader *, int, PyObject *);

/* embedded._decode: {"version": version, **fields} plus "raw" (the original bytes) where
   the decode was lenient. Anything that would be an error there is BAIL here. */
static int
decode_embedded(const unsigned char *data, Py_ssize_t size, FieldsReader fields,
                PyObject **out)
{
    Reader r = {data, size, 0};
    int64_t version;
    int rc;
    if (size == 0) {
        /* Zero-length data: no version, every field's default (version -1 has none). */
        PyObject *d = PyDict_New();
        if (d == NULL)
            return python_failure();
        rc = put(d, k_version, Py_NewRef(Py_None));
        if (rc == OK)
            rc = fields(&r, -1, d);
        if (rc == OK)
            rc = put(d, k_raw, PyBytes_FromStringAndSize(NULL, 0));
        if (rc != OK) {
            Py_DECREF(d);
            return BAIL;
        }
        *out = d;
        return OK;
    }
    if (read_i16(&r, &version) != OK || version < 0)
        return BAIL;
    int schema = version < HIGHEST_EMBEDDED ? (int)version : HIGHEST_EMBEDDED;
    /* The known schema for the version, then the longest complete older prefix. */
    for (int v = schema; v >= 0; v--) {
        PyObject *d = PyDict_New();
        if (d == NULL)
            return BAIL;
        r.p = 2;
        rc = put(d, k_version, PyLong_FromLongLong(version));
        if (rc == OK)
            rc = fields(&r, v, d);
        if (rc == OK && r.p != size) {
            if (v == schema) /* trailing bytes: a newer version's fields, kept raw */
                rc = put(d, k_raw, PyBytes_FromStringAndSize((const char *)data, size));
            else
                rc = FAIL; /* an older layout must end exactly at the end */
        }
        else if (rc == OK && v != schema)
            rc = put(d, k_raw, PyBytes_FromStringAndSize((const char *)data, size));
        if (rc == OK) {
            *out = d;
            return OK;
        }
        Py_DECREF(d);
        if (rc == BAIL)
            return BAIL;
    }
    return BAIL; /* undecodable: the Python decoder keeps it raw with its error */
}

/* -- GroupMetadataValue ------------------------------------------------------------------ */

/* Subscription or assignment: raw bytes, or for a consumer group the decoded object. */
static int
read_member_protocol(Reader *r, int flexible, int consumer, FieldsReader fields,
                     PyObject **out)
{
    if (!consumer)
        return read_bytes(r, flexible, 0, out);
    int64_t len;
    CHECK(read_length(r, flexible, 4, 0, 1, &len));
    CHECK(decode_embedded(r->b + r->p, (Py_ssize_t)len, fields, out));
    r->p += (Py_ssize_t)len;
    return OK;
}

/* Flexible versions end each struct with tagged fields; only an empty section is
   decoded here. */
static int
no_tagged_fields(Reader *r, int flexible)
{
    int64_t count;
    if (!flexible)
        return OK;
    CHECK(read_uvarint(r, &count));
    return count == 0 ? OK : BAIL;
}

static int
member_fields(Reader *r, int version, int consumer, PyObject *d)
{
    int flexible = version >= 4;
    int64_t rebalance_timeout = -1, session_timeout;
    PUT_READ(d, k_member_id, read_string(r, flexible, 0, 0, &_v));
    if (version >= 3)
        PUT_READ(d, k_group_instance_id, read_string(r, flexible, 1, 0, &_v));
    else
        CHECK(put(d, k_group_instance_id, Py_NewRef(Py_None)));
    PUT_READ(d, k_client_id, read_string(r, flexible, 0, 0, &_v));
    PUT_READ(d, k_client_host, read_string(r, flexible, 0, 0, &_v));
    if (version >= 1)
        CHECK(read_i32(r, &rebalance_timeout));
    CHECK(put(d, k_rebalance_timeout, PyLong_FromLongLong(rebalance_timeout)));
    CHECK(read_i32(r, &session_timeout));
    CHECK(put(d, k_session_timeout, PyLong_FromLongLong(session_timeout)));
    PUT_READ(d, k_subscription,
             read_member_protocol(r, flexible, consumer, subscription_fields, &_v));
    PUT_READ(d, k_assignment,
             read_member_protocol(r, flexible, consumer, assignment_fields, &_v));
    return no_tagged_fields(r, flexible);
}

static int
group_metadata_fields(Reader *r, int version, PyObject *d)
{
    int flexible = version >= 4;
    int64_t generation, timestamp = -1, count;
    PyObject *protocol_type = NULL;
    CHECK(read_string(r, flexible, 0, 0, &protocol_type));
    int consumer = PyUnicode_CompareWithASCIIString(protocol_type, "consumer") == 0;
    CHECK(put(d, k_protocol_type, protocol_type));
    CHECK(read_i32(r, &generation));
    CHECK(put(d, k_generation, PyLong_FromLongLong(generation)));
    PUT_READ(d, k_protocol, read_string(r, flexible, 1, 0, &_v));
    PUT_READ(d, k_leader, read_string(r, flexible, 1, 0, &_v));
    if (version >= 2)
        CHECK(read_i64(r, &timestamp));
    CHECK(put(d, k_current_state_timestamp, PyLong_FromLongLong(timestamp)));
    CHECK(read_length(r, flexible, 4, 0, 1, &count));
    PyObject *members = PyList_New((Py_ssize_t)count);
    if (members == NULL)
        return python_failure();
    for (Py_ssize_t i = 0; i < (Py_ssize_t)count; i++) {
        PyObject *member = PyDict_New();
        int rc = member == NULL ? python_failure() : OK;
        if (rc == OK) {
            PyList_SET_ITEM(members, i, member);
            rc = member_fields(r, version, consumer, member);
        }
        if (rc != OK) {
            Py_DECREF(members);
            return rc;
        }
    }
    CHECK(put(d, k_members, members));
    CHECK(no_tagged_fields(r, flexible));
    return r->p == r->n ? OK : FAIL; /* trailing bytes */
}

static PyObject *
decode_group_metadata_value(PyObject *module, PyObject *value)
{
    (void)module;
    if (!PyBytes_CheckExact(value))
        Py_RETURN_NONE;
    Reader r = {(const unsigned char *)PyBytes_AS_STRING(value), PyBytes_GET_SIZE(value), 0};
    int64_t version;
    if (read_i16(&r, &version) != OK || version < 0 || version > HIGHEST_GROUP)
        Py_RETURN_NONE;
    PyObject *d = PyDict_New();
    if (d == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (group_metadata_fields(&r, (int)version, d) != OK) {
        Py_DECREF(d);
        Py_RETURN_NONE;
    }
    return d;
}

static PyMethodDef methods[] = {
    {"decode_group_metadata_value", decode_group_metadata_value, METH_O,
     "decode_group_metadata_value(value: bytes) -> dict | None\n\n"
     "A GroupMetadataValue (version prefix included) decoded as the pure-Python codec\n"
     "decodes it, members' consumer protocol included; None where it cannot be sure."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_speedups", "C accelerator for services.codec (optional).", -1,
    methods, NULL, NULL, NULL, NULL,
};

static int
intern(PyObject **slot, const char *name)
{
    *slot = PyUnicode_InternFromString(name);
    return *slot == NULL ? -1 : 0;
}

PyMODINIT_FUNC
PyInit__speedups(void)
{
    if (intern(&k_version, "version") || intern(&k_topics, "topics") ||
        intern(&k_user_data, "user_data") || intern(&k_owned_partitions, "owned_partitions") ||
        intern(&k_generation_id, "generation_id") || intern(&k_rack_id, "rack_id") ||
        intern(&k_raw, "raw") || intern(&k_topic, "topic") ||
        intern(&k_partitions, "partitions") ||
        intern(&k_assigned_partitions, "assigned_partitions") ||
        intern(&k_protocol_type, "protocol_type") || intern(&k_generation, "generation") ||
        intern(&k_protocol, "protocol") || intern(&k_leader, "leader") ||
        intern(&k_current_state_timestamp, "current_state_timestamp") ||
        intern(&k_members, "members") || intern(&k_member_id, "member_id") ||
        intern(&k_group_instance_id, "group_instance_id") ||
        intern(&k_client_id, "client_id") || intern(&k_client_host, "client_host") ||
        intern(&k_rebalance_timeout, "rebalance_timeout") ||
        intern(&k_session_timeout, "session_timeout") ||
        intern(&k_subscription, "subscription") || intern(&k_assignment, "assignment"))
        return NULL;
    return PyModule_Create(&module_def);
}
