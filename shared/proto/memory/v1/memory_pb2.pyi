import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MemoryType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_TYPE_UNSPECIFIED: _ClassVar[MemoryType]
    MEMORY_TYPE_USER: _ClassVar[MemoryType]
    MEMORY_TYPE_FEEDBACK: _ClassVar[MemoryType]
    MEMORY_TYPE_PROJECT: _ClassVar[MemoryType]
    MEMORY_TYPE_REFERENCE: _ClassVar[MemoryType]

class MemoryScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_SCOPE_UNSPECIFIED: _ClassVar[MemoryScope]
    MEMORY_SCOPE_SESSION: _ClassVar[MemoryScope]
    MEMORY_SCOPE_PROJECT: _ClassVar[MemoryScope]
    MEMORY_SCOPE_GLOBAL: _ClassVar[MemoryScope]

class RecordStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RECORD_STATUS_UNSPECIFIED: _ClassVar[RecordStatus]
    RECORD_STATUS_CANONICAL: _ClassVar[RecordStatus]
    RECORD_STATUS_PENDING: _ClassVar[RecordStatus]

class MemoryErrorCategory(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_ERROR_CATEGORY_UNSPECIFIED: _ClassVar[MemoryErrorCategory]
    MEMORY_ERROR_CATEGORY_NOT_FOUND: _ClassVar[MemoryErrorCategory]
    MEMORY_ERROR_CATEGORY_INVALID_TYPE: _ClassVar[MemoryErrorCategory]
    MEMORY_ERROR_CATEGORY_RATIFICATION_UNSUPPORTED: _ClassVar[MemoryErrorCategory]
    MEMORY_ERROR_CATEGORY_BUDGET_EXCEEDED: _ClassVar[MemoryErrorCategory]
    MEMORY_ERROR_CATEGORY_SOURCE_UNAVAILABLE: _ClassVar[MemoryErrorCategory]
    MEMORY_ERROR_CATEGORY_UNKNOWN: _ClassVar[MemoryErrorCategory]
    MEMORY_ERROR_CATEGORY_INVALID_SCOPE: _ClassVar[MemoryErrorCategory]

class HookPoint(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HOOK_POINT_UNSPECIFIED: _ClassVar[HookPoint]
    HOOK_POINT_POST_MODEL_RESPONSE: _ClassVar[HookPoint]
    HOOK_POINT_SESSION_END: _ClassVar[HookPoint]

class RememberAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REMEMBER_ACTION_UNSPECIFIED: _ClassVar[RememberAction]
    REMEMBER_ACTION_CREATED: _ClassVar[RememberAction]
    REMEMBER_ACTION_REINFORCED: _ClassVar[RememberAction]
    REMEMBER_ACTION_UPDATED: _ClassVar[RememberAction]
    REMEMBER_ACTION_NEEDS_CONFIRMATION: _ClassVar[RememberAction]
MEMORY_TYPE_UNSPECIFIED: MemoryType
MEMORY_TYPE_USER: MemoryType
MEMORY_TYPE_FEEDBACK: MemoryType
MEMORY_TYPE_PROJECT: MemoryType
MEMORY_TYPE_REFERENCE: MemoryType
MEMORY_SCOPE_UNSPECIFIED: MemoryScope
MEMORY_SCOPE_SESSION: MemoryScope
MEMORY_SCOPE_PROJECT: MemoryScope
MEMORY_SCOPE_GLOBAL: MemoryScope
RECORD_STATUS_UNSPECIFIED: RecordStatus
RECORD_STATUS_CANONICAL: RecordStatus
RECORD_STATUS_PENDING: RecordStatus
MEMORY_ERROR_CATEGORY_UNSPECIFIED: MemoryErrorCategory
MEMORY_ERROR_CATEGORY_NOT_FOUND: MemoryErrorCategory
MEMORY_ERROR_CATEGORY_INVALID_TYPE: MemoryErrorCategory
MEMORY_ERROR_CATEGORY_RATIFICATION_UNSUPPORTED: MemoryErrorCategory
MEMORY_ERROR_CATEGORY_BUDGET_EXCEEDED: MemoryErrorCategory
MEMORY_ERROR_CATEGORY_SOURCE_UNAVAILABLE: MemoryErrorCategory
MEMORY_ERROR_CATEGORY_UNKNOWN: MemoryErrorCategory
MEMORY_ERROR_CATEGORY_INVALID_SCOPE: MemoryErrorCategory
HOOK_POINT_UNSPECIFIED: HookPoint
HOOK_POINT_POST_MODEL_RESPONSE: HookPoint
HOOK_POINT_SESSION_END: HookPoint
REMEMBER_ACTION_UNSPECIFIED: RememberAction
REMEMBER_ACTION_CREATED: RememberAction
REMEMBER_ACTION_REINFORCED: RememberAction
REMEMBER_ACTION_UPDATED: RememberAction
REMEMBER_ACTION_NEEDS_CONFIRMATION: RememberAction

class MemoryError(_message.Message):
    __slots__ = ("category", "message", "retryable")
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    category: MemoryErrorCategory
    message: str
    retryable: bool
    def __init__(self, category: _Optional[_Union[MemoryErrorCategory, str]] = ..., message: _Optional[str] = ..., retryable: _Optional[bool] = ...) -> None: ...

class ContentBlock(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ModelTarget(_message.Message):
    __slots__ = ("id", "context_window", "effective_ceiling")
    ID_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_CEILING_FIELD_NUMBER: _ClassVar[int]
    id: str
    context_window: int
    effective_ceiling: int
    def __init__(self, id: _Optional[str] = ..., context_window: _Optional[int] = ..., effective_ceiling: _Optional[int] = ...) -> None: ...

class ProducerRef(_message.Message):
    __slots__ = ("name", "version", "digest")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    digest: str
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., digest: _Optional[str] = ...) -> None: ...

class PromptExpansionSpec(_message.Message):
    __slots__ = ("name", "description", "template")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    template: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., template: _Optional[str] = ...) -> None: ...

class ConfigField(_message.Message):
    __slots__ = ("name", "type", "description", "default_json")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_JSON_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    description: str
    default_json: str
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., description: _Optional[str] = ..., default_json: _Optional[str] = ...) -> None: ...

class ConfigSchema(_message.Message):
    __slots__ = ("fields", "json_schema")
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedCompositeFieldContainer[ConfigField]
    json_schema: str
    def __init__(self, fields: _Optional[_Iterable[_Union[ConfigField, _Mapping]]] = ..., json_schema: _Optional[str] = ...) -> None: ...

class MemoryCapabilities(_message.Message):
    __slots__ = ("default_token_budget", "supported_types", "supported_scopes", "ratification_supported", "slash_commands", "config_schema", "supported_hook_points")
    DEFAULT_TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    SUPPORTED_TYPES_FIELD_NUMBER: _ClassVar[int]
    SUPPORTED_SCOPES_FIELD_NUMBER: _ClassVar[int]
    RATIFICATION_SUPPORTED_FIELD_NUMBER: _ClassVar[int]
    SLASH_COMMANDS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    SUPPORTED_HOOK_POINTS_FIELD_NUMBER: _ClassVar[int]
    default_token_budget: int
    supported_types: _containers.RepeatedScalarFieldContainer[MemoryType]
    supported_scopes: _containers.RepeatedScalarFieldContainer[MemoryScope]
    ratification_supported: bool
    slash_commands: _containers.RepeatedCompositeFieldContainer[PromptExpansionSpec]
    config_schema: ConfigSchema
    supported_hook_points: _containers.RepeatedScalarFieldContainer[HookPoint]
    def __init__(self, default_token_budget: _Optional[int] = ..., supported_types: _Optional[_Iterable[_Union[MemoryType, str]]] = ..., supported_scopes: _Optional[_Iterable[_Union[MemoryScope, str]]] = ..., ratification_supported: _Optional[bool] = ..., slash_commands: _Optional[_Iterable[_Union[PromptExpansionSpec, _Mapping]]] = ..., config_schema: _Optional[_Union[ConfigSchema, _Mapping]] = ..., supported_hook_points: _Optional[_Iterable[_Union[HookPoint, str]]] = ...) -> None: ...

class Provenance(_message.Message):
    __slots__ = ("source_session_id", "source_turn_id", "recorded_by")
    SOURCE_SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDED_BY_FIELD_NUMBER: _ClassVar[int]
    source_session_id: str
    source_turn_id: str
    recorded_by: str
    def __init__(self, source_session_id: _Optional[str] = ..., source_turn_id: _Optional[str] = ..., recorded_by: _Optional[str] = ...) -> None: ...

class MemoryRecord(_message.Message):
    __slots__ = ("id", "type", "scope", "title", "content", "tokens", "status", "links", "created_at", "updated_at", "provenance", "relevance_score")
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    PROVENANCE_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_SCORE_FIELD_NUMBER: _ClassVar[int]
    id: str
    type: MemoryType
    scope: MemoryScope
    title: str
    content: _containers.RepeatedCompositeFieldContainer[ContentBlock]
    tokens: int
    status: RecordStatus
    links: _containers.RepeatedScalarFieldContainer[str]
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    provenance: Provenance
    relevance_score: float
    def __init__(self, id: _Optional[str] = ..., type: _Optional[_Union[MemoryType, str]] = ..., scope: _Optional[_Union[MemoryScope, str]] = ..., title: _Optional[str] = ..., content: _Optional[_Iterable[_Union[ContentBlock, _Mapping]]] = ..., tokens: _Optional[int] = ..., status: _Optional[_Union[RecordStatus, str]] = ..., links: _Optional[_Iterable[str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., provenance: _Optional[_Union[Provenance, _Mapping]] = ..., relevance_score: _Optional[float] = ...) -> None: ...

class RecordResult(_message.Message):
    __slots__ = ("id", "status")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    id: str
    status: RecordStatus
    def __init__(self, id: _Optional[str] = ..., status: _Optional[_Union[RecordStatus, str]] = ...) -> None: ...

class DeleteResult(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: _Optional[bool] = ...) -> None: ...

class GetCapabilitiesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetCapabilitiesResponse(_message.Message):
    __slots__ = ("capabilities",)
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    capabilities: MemoryCapabilities
    def __init__(self, capabilities: _Optional[_Union[MemoryCapabilities, _Mapping]] = ...) -> None: ...

class ConfigureRequest(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: _struct_pb2.Struct
    def __init__(self, config: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ConfigureResponse(_message.Message):
    __slots__ = ("effective",)
    EFFECTIVE_FIELD_NUMBER: _ClassVar[int]
    effective: _struct_pb2.Struct
    def __init__(self, effective: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class RecallRequest(_message.Message):
    __slots__ = ("session_id", "turn_id", "token_budget", "model_target", "files_touched", "working_directory", "type_filter", "scope_filter", "include_pending", "query", "limit", "min_relevance")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    MODEL_TARGET_FIELD_NUMBER: _ClassVar[int]
    FILES_TOUCHED_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    TYPE_FILTER_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FILTER_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_PENDING_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    MIN_RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    turn_id: str
    token_budget: int
    model_target: ModelTarget
    files_touched: _containers.RepeatedScalarFieldContainer[str]
    working_directory: str
    type_filter: _containers.RepeatedScalarFieldContainer[MemoryType]
    scope_filter: _containers.RepeatedScalarFieldContainer[MemoryScope]
    include_pending: bool
    query: str
    limit: int
    min_relevance: float
    def __init__(self, session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., token_budget: _Optional[int] = ..., model_target: _Optional[_Union[ModelTarget, _Mapping]] = ..., files_touched: _Optional[_Iterable[str]] = ..., working_directory: _Optional[str] = ..., type_filter: _Optional[_Iterable[_Union[MemoryType, str]]] = ..., scope_filter: _Optional[_Iterable[_Union[MemoryScope, str]]] = ..., include_pending: _Optional[bool] = ..., query: _Optional[str] = ..., limit: _Optional[int] = ..., min_relevance: _Optional[float] = ...) -> None: ...

class RecallResponse(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[MemoryRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[MemoryRecord, _Mapping]]] = ...) -> None: ...

class RecordRequest(_message.Message):
    __slots__ = ("type", "scope", "id", "title", "content", "session_id", "turn_id", "recorded_by", "working_directory", "status")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    RECORDED_BY_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    type: MemoryType
    scope: MemoryScope
    id: str
    title: str
    content: _containers.RepeatedCompositeFieldContainer[ContentBlock]
    session_id: str
    turn_id: str
    recorded_by: str
    working_directory: str
    status: RecordStatus
    def __init__(self, type: _Optional[_Union[MemoryType, str]] = ..., scope: _Optional[_Union[MemoryScope, str]] = ..., id: _Optional[str] = ..., title: _Optional[str] = ..., content: _Optional[_Iterable[_Union[ContentBlock, _Mapping]]] = ..., session_id: _Optional[str] = ..., turn_id: _Optional[str] = ..., recorded_by: _Optional[str] = ..., working_directory: _Optional[str] = ..., status: _Optional[_Union[RecordStatus, str]] = ...) -> None: ...

class RecordResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: RecordResult
    def __init__(self, result: _Optional[_Union[RecordResult, _Mapping]] = ...) -> None: ...

class UpdateRecordRequest(_message.Message):
    __slots__ = ("id", "title", "content")
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    id: str
    title: str
    content: _containers.RepeatedCompositeFieldContainer[ContentBlock]
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., content: _Optional[_Iterable[_Union[ContentBlock, _Mapping]]] = ...) -> None: ...

class UpdateRecordResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: RecordResult
    def __init__(self, result: _Optional[_Union[RecordResult, _Mapping]] = ...) -> None: ...

class DeleteRecordRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class DeleteRecordResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: DeleteResult
    def __init__(self, result: _Optional[_Union[DeleteResult, _Mapping]] = ...) -> None: ...

class ApproveRecordRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ApproveRecordResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: RecordResult
    def __init__(self, result: _Optional[_Union[RecordResult, _Mapping]] = ...) -> None: ...

class RejectRecordRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class RejectRecordResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: DeleteResult
    def __init__(self, result: _Optional[_Union[DeleteResult, _Mapping]] = ...) -> None: ...

class RenderNode(_message.Message):
    __slots__ = ("kind", "text", "target", "resolved", "children")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    kind: str
    text: str
    target: str
    resolved: bool
    children: _containers.RepeatedCompositeFieldContainer[RenderNode]
    def __init__(self, kind: _Optional[str] = ..., text: _Optional[str] = ..., target: _Optional[str] = ..., resolved: _Optional[bool] = ..., children: _Optional[_Iterable[_Union[RenderNode, _Mapping]]] = ...) -> None: ...

class RenderTree(_message.Message):
    __slots__ = ("root",)
    ROOT_FIELD_NUMBER: _ClassVar[int]
    root: RenderNode
    def __init__(self, root: _Optional[_Union[RenderNode, _Mapping]] = ...) -> None: ...

class RenderRequest(_message.Message):
    __slots__ = ("status_filter", "page_size")
    STATUS_FILTER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    status_filter: RecordStatus
    page_size: int
    def __init__(self, status_filter: _Optional[_Union[RecordStatus, str]] = ..., page_size: _Optional[int] = ...) -> None: ...

class RenderResponse(_message.Message):
    __slots__ = ("tree",)
    TREE_FIELD_NUMBER: _ClassVar[int]
    tree: RenderTree
    def __init__(self, tree: _Optional[_Union[RenderTree, _Mapping]] = ...) -> None: ...

class ListRecordsRequest(_message.Message):
    __slots__ = ("type_filter", "scope_filter", "status_filter", "page_size", "page_token")
    TYPE_FILTER_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FILTER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FILTER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    type_filter: _containers.RepeatedScalarFieldContainer[MemoryType]
    scope_filter: _containers.RepeatedScalarFieldContainer[MemoryScope]
    status_filter: RecordStatus
    page_size: int
    page_token: str
    def __init__(self, type_filter: _Optional[_Iterable[_Union[MemoryType, str]]] = ..., scope_filter: _Optional[_Iterable[_Union[MemoryScope, str]]] = ..., status_filter: _Optional[_Union[RecordStatus, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListRecordsResponse(_message.Message):
    __slots__ = ("records", "next_page_token")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[MemoryRecord]
    next_page_token: str
    def __init__(self, records: _Optional[_Iterable[_Union[MemoryRecord, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetRecordRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetRecordResponse(_message.Message):
    __slots__ = ("record",)
    RECORD_FIELD_NUMBER: _ClassVar[int]
    record: MemoryRecord
    def __init__(self, record: _Optional[_Union[MemoryRecord, _Mapping]] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeResponse(_message.Message):
    __slots__ = ("producer",)
    PRODUCER_FIELD_NUMBER: _ClassVar[int]
    producer: ProducerRef
    def __init__(self, producer: _Optional[_Union[ProducerRef, _Mapping]] = ...) -> None: ...

class RememberRequest(_message.Message):
    __slots__ = ("record", "update_id", "confirm_new")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    UPDATE_ID_FIELD_NUMBER: _ClassVar[int]
    CONFIRM_NEW_FIELD_NUMBER: _ClassVar[int]
    record: RecordRequest
    update_id: str
    confirm_new: bool
    def __init__(self, record: _Optional[_Union[RecordRequest, _Mapping]] = ..., update_id: _Optional[str] = ..., confirm_new: _Optional[bool] = ...) -> None: ...

class NearMatch(_message.Message):
    __slots__ = ("record", "similarity")
    RECORD_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    record: MemoryRecord
    similarity: float
    def __init__(self, record: _Optional[_Union[MemoryRecord, _Mapping]] = ..., similarity: _Optional[float] = ...) -> None: ...

class RememberResponse(_message.Message):
    __slots__ = ("action", "result", "candidates")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    action: RememberAction
    result: RecordResult
    candidates: _containers.RepeatedCompositeFieldContainer[NearMatch]
    def __init__(self, action: _Optional[_Union[RememberAction, str]] = ..., result: _Optional[_Union[RecordResult, _Mapping]] = ..., candidates: _Optional[_Iterable[_Union[NearMatch, _Mapping]]] = ...) -> None: ...

class ForgetRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ForgetResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: DeleteResult
    def __init__(self, result: _Optional[_Union[DeleteResult, _Mapping]] = ...) -> None: ...

class SearchRequest(_message.Message):
    __slots__ = ("query", "session_id", "working_directory", "type_filter", "scope_filter", "limit", "include_pending")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    TYPE_FILTER_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FILTER_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_PENDING_FIELD_NUMBER: _ClassVar[int]
    query: str
    session_id: str
    working_directory: str
    type_filter: _containers.RepeatedScalarFieldContainer[MemoryType]
    scope_filter: _containers.RepeatedScalarFieldContainer[MemoryScope]
    limit: int
    include_pending: bool
    def __init__(self, query: _Optional[str] = ..., session_id: _Optional[str] = ..., working_directory: _Optional[str] = ..., type_filter: _Optional[_Iterable[_Union[MemoryType, str]]] = ..., scope_filter: _Optional[_Iterable[_Union[MemoryScope, str]]] = ..., limit: _Optional[int] = ..., include_pending: _Optional[bool] = ...) -> None: ...
