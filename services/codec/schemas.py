"""Field tables for every record in `__consumer_offsets`, written from Kafka's message specs.

Source: apache/kafka `group-coordinator/src/main/resources/common/message/*.json` (trunk
@ e6d24211, the 4.1 line) and `clients/.../ConsumerProtocol{Subscription,Assignment}.json`.
One `Message` per spec file, with fields in wire order. `tests/codec/test_spec_conformance.py`
compares these tables with the specs field by field.

Record type 0 (the 0.8.2 key version) has the same key layout as type 1, and its only
value version (v0) is OffsetCommitValue v0, so both types use the OffsetCommit tables
(`GroupCoordinatorRecordSerde` did the same up to 4.0).

Types 9 and up (share and streams groups) are marked "in development" upstream and are
decoded on a best-effort basis. Type 9 changed incompatibly between 3.9 and 4.0, so the
3.9 layout is kept too, as a fallback.
"""

from services.codec.schema import Field as F
from services.codec.schema import Message

OFFSET_COMMIT_KEY = Message(
    "OffsetCommitKey",
    "0",
    "none",
    (
        F("group", "string", "0"),
        F("topic", "string", "0"),
        F("partition", "int32", "0"),
    ),
)


OFFSET_COMMIT_VALUE = Message(
    "OffsetCommitValue",
    "0-4",
    "4+",
    (
        F("offset", "int64", "0+"),
        F("leaderEpoch", "int32", "3+", default=-1),
        F("metadata", "string", "0+"),
        F("commitTimestamp", "int64", "0+"),
        F("expireTimestamp", "int64", "1", default=-1),
        F("topicId", "uuid", "4+", tag=0, tagged="4+"),
    ),
)


GROUP_METADATA_KEY = Message(
    "GroupMetadataKey",
    "0",
    "none",
    (F("group", "string", "0"),),
)


MEMBER_METADATA_GROUP_METADATA_VALUE = (
    F("memberId", "string", "0+"),
    F("groupInstanceId", "string", "3+", nullable="3+", default=None),
    F("clientId", "string", "0+"),
    F("clientHost", "string", "0+"),
    F("rebalanceTimeout", "int32", "1+", default=-1),
    F("sessionTimeout", "int32", "0+"),
    F("subscription", "bytes", "0+"),
    F("assignment", "bytes", "0+"),
)

GROUP_METADATA_VALUE = Message(
    "GroupMetadataValue",
    "0-4",
    "4+",
    (
        F("protocolType", "string", "0+"),
        F("generation", "int32", "0+"),
        F("protocol", "string", "0+", nullable="0+"),
        F("leader", "string", "0+", nullable="0+"),
        F("currentStateTimestamp", "int64", "2+", default=-1),
        F("members", "[]MemberMetadata", "0+", fields=MEMBER_METADATA_GROUP_METADATA_VALUE),
    ),
)


CONSUMER_GROUP_METADATA_KEY = Message(
    "ConsumerGroupMetadataKey",
    "0",
    "none",
    (F("GroupId", "string", "0"),),
)


CONSUMER_GROUP_METADATA_VALUE = Message(
    "ConsumerGroupMetadataValue",
    "0",
    "0+",
    (
        F("Epoch", "int32", "0+"),
        F("MetadataHash", "int64", "0+", default=0, tag=0, tagged="0+"),
    ),
)


CONSUMER_GROUP_PARTITION_METADATA_KEY = Message(
    "ConsumerGroupPartitionMetadataKey",
    "0",
    "none",
    (F("GroupId", "string", "0"),),
)


CONSUMER_GROUP_PARTITION_METADATA_VALUE = Message(
    "ConsumerGroupPartitionMetadataValue",
    "0",
    "0+",
    (
        F(
            "Topics",
            "[]TopicMetadata",
            "0+",
            fields=(
                F("TopicId", "uuid", "0+"),
                F("TopicName", "string", "0+"),
                F("NumPartitions", "int32", "0+"),
                F(
                    "PartitionMetadata",
                    "[]PartitionMetadata",
                    "0+",
                    fields=(
                        F("Partition", "int32", "0+"),
                        F("Racks", "[]string", "0+"),
                    ),
                ),
            ),
        ),
    ),
)


CONSUMER_GROUP_MEMBER_METADATA_KEY = Message(
    "ConsumerGroupMemberMetadataKey",
    "0",
    "none",
    (
        F("GroupId", "string", "0"),
        F("MemberId", "string", "0"),
    ),
)


CONSUMER_GROUP_MEMBER_METADATA_VALUE = Message(
    "ConsumerGroupMemberMetadataValue",
    "0",
    "0+",
    (
        F("InstanceId", "string", "0+", nullable="0+"),
        F("RackId", "string", "0+", nullable="0+"),
        F("ClientId", "string", "0+"),
        F("ClientHost", "string", "0+"),
        F("SubscribedTopicNames", "[]string", "0+"),
        F("SubscribedTopicRegex", "string", "0+", nullable="0+"),
        F("RebalanceTimeoutMs", "int32", "0+", default=-1),
        F("ServerAssignor", "string", "0+", nullable="0+"),
        F(
            "ClassicMemberMetadata",
            "ClassicMemberMetadata",
            "0+",
            nullable="0+",
            default=None,
            tag=0,
            tagged="0+",
            fields=(
                F("SessionTimeoutMs", "int32", "0+"),
                F(
                    "SupportedProtocols",
                    "[]ClassicProtocol",
                    "0+",
                    fields=(
                        F("Name", "string", "0+"),
                        F("Metadata", "bytes", "0+"),
                    ),
                ),
            ),
        ),
    ),
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = Message(
    "ConsumerGroupTargetAssignmentMetadataKey",
    "0",
    "none",
    (F("GroupId", "string", "0"),),
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Message(
    "ConsumerGroupTargetAssignmentMetadataValue",
    "0",
    "0+",
    (
        F("AssignmentEpoch", "int32", "0+"),
        F("AssignmentTimestamp", "int64", "0+", default=0, tag=0, tagged="0+"),
    ),
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = Message(
    "ConsumerGroupTargetAssignmentMemberKey",
    "0",
    "none",
    (
        F("GroupId", "string", "0"),
        F("MemberId", "string", "0"),
    ),
)


CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message(
    "ConsumerGroupTargetAssignmentMemberValue",
    "0",
    "0+",
    (
        F(
            "TopicPartitions",
            "[]TopicPartition",
            "0+",
            fields=(
                F("TopicId", "uuid", "0+"),
                F("Partitions", "[]int32", "0+"),
            ),
        ),
    ),
)


CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = Message(
    "ConsumerGroupCurrentMemberAssignmentKey",
    "0",
    "none",
    (
        F("GroupId", "string", "0"),
        F("MemberId", "string", "0"),
    ),
)


TOPIC_PARTITIONS_CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = (
    F("TopicId", "uuid", "0+"),
    F("Partitions", "[]int32", "0+"),
    F("AssignmentEpochs", "[]int32", "0+", nullable="0+", default=None, tag=0, tagged="0+"),
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message(
    "ConsumerGroupCurrentMemberAssignmentValue",
    "0",
    "0+",
    (
        F("MemberEpoch", "int32", "0+"),
        F("PreviousMemberEpoch", "int32", "0+"),
        F("State", "int8", "0+"),
        F(
            "AssignedPartitions",
            "[]TopicPartitions",
            "0+",
            fields=TOPIC_PARTITIONS_CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        F(
            "PartitionsPendingRevocation",
            "[]TopicPartitions",
            "0+",
            fields=TOPIC_PARTITIONS_CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
    ),
)


SHARE_GROUP_PARTITION_METADATA_KEY = Message(
    "ShareGroupPartitionMetadataKey",
    "0",
    "none",
    (F("GroupId", "string", "0"),),
)


SHARE_GROUP_PARTITION_METADATA_VALUE = Message(
    "ShareGroupPartitionMetadataValue",
    "0",
    "0+",
    (
        F(
            "Topics",
            "[]TopicMetadata",
            "0+",
            fields=(
                F("TopicId", "uuid", "0+"),
                F("TopicName", "string", "0+"),
                F("NumPartitions", "int32", "0+"),
                F(
                    "PartitionMetadata",
                    "[]PartitionMetadata",
                    "0+",
                    fields=(
                        F("Partition", "int32", "0+"),
                        F("Racks", "[]string", "0+"),
                    ),
                ),
            ),
        ),
    ),
)


SHARE_GROUP_MEMBER_METADATA_KEY = Message(
    "ShareGroupMemberMetadataKey",
    "0",
    "none",
    (
        F("GroupId", "string", "0"),
        F("MemberId", "string", "0"),
    ),
)


SHARE_GROUP_MEMBER_METADATA_VALUE = Message(
    "ShareGroupMemberMetadataValue",
    "0",
    "0+",
    (
        F("RackId", "string", "0+", nullable="0+"),
        F("ClientId", "string", "0+"),
        F("ClientHost", "string", "0+"),
        F("SubscribedTopicNames", "[]string", "0+"),
    ),
)


SHARE_GROUP_METADATA_KEY = Message(
    "ShareGroupMetadataKey",
    "0",
    "none",
    (F("GroupId", "string", "0"),),
)


SHARE_GROUP_METADATA_VALUE = Message(
    "ShareGroupMetadataValue",
    "0",
    "0+",
    (
        F("Epoch", "int32", "0+"),
        F("MetadataHash", "int64", "0+"),
    ),
)


SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = Message(
    "ShareGroupTargetAssignmentMetadataKey",
    "0",
    "none",
    (F("GroupId", "string", "0"),),
)


SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Message(
    "ShareGroupTargetAssignmentMetadataValue",
    "0",
    "0+",
    (
        F("AssignmentEpoch", "int32", "0+"),
        F("AssignmentTimestamp", "int64", "0+", default=0, tag=0, tagged="0+"),
    ),
)


SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = Message(
    "ShareGroupTargetAssignmentMemberKey",
    "0",
    "none",
    (
        F("GroupId", "string", "0"),
        F("MemberId", "string", "0"),
    ),
)


SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message(
    "ShareGroupTargetAssignmentMemberValue",
    "0",
    "0+",
    (
        F(
            "TopicPartitions",
            "[]TopicPartition",
            "0+",
            fields=(
                F("TopicId", "uuid", "0+"),
                F("Partitions", "[]int32", "0+"),
            ),
        ),
    ),
)


SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = Message(
    "ShareGroupCurrentMemberAssignmentKey",
    "0",
    "none",
    (
        F("GroupId", "string", "0"),
        F("MemberId", "string", "0"),
    ),
)


TOPIC_PARTITIONS_SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = (
    F("TopicId", "uuid", "0+"),
    F("Partitions", "[]int32", "0+"),
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message(
    "ShareGroupCurrentMemberAssignmentValue",
    "0",
    "0+",
    (
        F("MemberEpoch", "int32", "0+"),
        F("PreviousMemberEpoch", "int32", "0+"),
        F("State", "int8", "0+"),
        F(
            "AssignedPartitions",
            "[]TopicPartitions",
            "0+",
            fields=TOPIC_PARTITIONS_SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
    ),
)


SHARE_GROUP_STATE_PARTITION_METADATA_KEY = Message(
    "ShareGroupStatePartitionMetadataKey",
    "0",
    "none",
    (F("GroupId", "string", "0"),),
)


TOPIC_PARTITIONS_INFO_SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = (
    F("TopicId", "uuid", "0+"),
    F("TopicName", "string", "0+"),
    F("Partitions", "[]int32", "0+"),
)

TOPIC_INFO_SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = (
    F("TopicId", "uuid", "0+"),
    F("TopicName", "string", "0+"),
)

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = Message(
    "ShareGroupStatePartitionMetadataValue",
    "0",
    "0+",
    (
        F(
            "InitializingTopics",
            "[]TopicPartitionsInfo",
            "0+",
            fields=TOPIC_PARTITIONS_INFO_SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
        ),
        F(
            "InitializedTopics",
            "[]TopicPartitionsInfo",
            "0+",
            fields=TOPIC_PARTITIONS_INFO_SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
        ),
        F(
            "DeletingTopics",
            "[]TopicInfo",
            "0+",
            fields=TOPIC_INFO_SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
        ),
    ),
)


CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = Message(
    "ConsumerGroupRegularExpressionKey",
    "0",
    "none",
    (
        F("GroupId", "string", "0"),
        F("RegularExpression", "string", "0"),
    ),
)


CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = Message(
    "ConsumerGroupRegularExpressionValue",
    "0",
    "0+",
    (
        F("Topics", "[]string", "0+"),
        F("Version", "int64", "0+"),
        F("Timestamp", "int64", "0+"),
    ),
)


STREAMS_GROUP_METADATA_KEY = Message(
    "StreamsGroupMetadataKey",
    "0",
    "none",
    (F("GroupId", "string", "0"),),
)


STREAMS_GROUP_METADATA_VALUE = Message(
    "StreamsGroupMetadataValue",
    "0",
    "0+",
    (
        F("Epoch", "int32", "0+"),
        F("MetadataHash", "int64", "0+"),
        F("ValidatedTopologyEpoch", "int32", "0+", default=-1, tag=0, tagged="0+"),
        F(
            "LastAssignmentConfigs",
            "[]LastAssignmentConfig",
            "0+",
            nullable="0+",
            default=None,
            tag=1,
            tagged="0+",
            fields=(
                F("Key", "string", "0+"),
                F("Value", "string", "0+"),
            ),
        ),
    ),
)


STREAMS_GROUP_PARTITION_METADATA_KEY = Message(
    "StreamsGroupPartitionMetadataKey",
    "0",
    "none",
    (F("GroupId", "string", "0"),),
)


STREAMS_GROUP_PARTITION_METADATA_VALUE = Message(
    "StreamsGroupPartitionMetadataValue",
    "0",
    "0+",
    (
        F(
            "Topics",
            "[]TopicMetadata",
            "0+",
            fields=(
                F("TopicId", "uuid", "0+"),
                F("TopicName", "string", "0+"),
                F("NumPartitions", "int32", "0+"),
                F(
                    "PartitionMetadata",
                    "[]PartitionMetadata",
                    "0+",
                    fields=(
                        F("Partition", "int32", "0+"),
                        F("Racks", "[]string", "0+"),
                    ),
                ),
            ),
        ),
    ),
)


STREAMS_GROUP_MEMBER_METADATA_KEY = Message(
    "StreamsGroupMemberMetadataKey",
    "0",
    "none",
    (
        F("GroupId", "string", "0"),
        F("MemberId", "string", "0"),
    ),
)


ENDPOINT_STREAMS_GROUP_MEMBER_METADATA_VALUE = (
    F("Host", "string", "0+"),
    F("Port", "uint16", "0+"),
)

KEY_VALUE_STREAMS_GROUP_MEMBER_METADATA_VALUE = (
    F("Key", "string", "0+"),
    F("Value", "string", "0+"),
)

STREAMS_GROUP_MEMBER_METADATA_VALUE = Message(
    "StreamsGroupMemberMetadataValue",
    "0",
    "0+",
    (
        F("InstanceId", "string", "0+", nullable="0+"),
        F("RackId", "string", "0+", nullable="0+"),
        F("ClientId", "string", "0+"),
        F("ClientHost", "string", "0+"),
        F("RebalanceTimeoutMs", "int32", "0+", default=-1),
        F("TopologyEpoch", "int32", "0+"),
        F("ProcessId", "string", "0+"),
        F(
            "UserEndpoint",
            "Endpoint",
            "0+",
            nullable="0+",
            default=None,
            fields=ENDPOINT_STREAMS_GROUP_MEMBER_METADATA_VALUE,
        ),
        F("ClientTags", "[]KeyValue", "0+", fields=KEY_VALUE_STREAMS_GROUP_MEMBER_METADATA_VALUE),
    ),
)


STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = Message(
    "StreamsGroupTargetAssignmentMetadataKey",
    "0",
    "none",
    (F("GroupId", "string", "0"),),
)


STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Message(
    "StreamsGroupTargetAssignmentMetadataValue",
    "0",
    "0+",
    (
        F("AssignmentEpoch", "int32", "0+"),
        F("AssignmentTimestamp", "int64", "0+", default=0, tag=0, tagged="0+"),
    ),
)


STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = Message(
    "StreamsGroupTargetAssignmentMemberKey",
    "0",
    "none",
    (
        F("GroupId", "string", "0"),
        F("MemberId", "string", "0"),
    ),
)


TASK_IDS_STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = (
    F("SubtopologyId", "string", "0+"),
    F("Partitions", "[]int32", "0+"),
)

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message(
    "StreamsGroupTargetAssignmentMemberValue",
    "0",
    "0+",
    (
        F(
            "ActiveTasks",
            "[]TaskIds",
            "0+",
            fields=TASK_IDS_STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        F(
            "StandbyTasks",
            "[]TaskIds",
            "0+",
            fields=TASK_IDS_STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        F(
            "WarmupTasks",
            "[]TaskIds",
            "0+",
            fields=TASK_IDS_STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
    ),
)


STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = Message(
    "StreamsGroupCurrentMemberAssignmentKey",
    "0",
    "none",
    (
        F("GroupId", "string", "0"),
        F("MemberId", "string", "0"),
    ),
)


TASK_IDS_STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = (
    F("SubtopologyId", "string", "0+"),
    F("Partitions", "[]int32", "0+"),
    F("AssignmentEpochs", "[]int32", "0+", nullable="0+", default=None, tag=0, tagged="0+"),
)

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message(
    "StreamsGroupCurrentMemberAssignmentValue",
    "0",
    "0+",
    (
        F("MemberEpoch", "int32", "0+"),
        F("PreviousMemberEpoch", "int32", "0+"),
        F("State", "int8", "0+"),
        F(
            "ActiveTasks",
            "[]TaskIds",
            "0+",
            fields=TASK_IDS_STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        F(
            "StandbyTasks",
            "[]TaskIds",
            "0+",
            fields=TASK_IDS_STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        F(
            "WarmupTasks",
            "[]TaskIds",
            "0+",
            fields=TASK_IDS_STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        F(
            "ActiveTasksPendingRevocation",
            "[]TaskIds",
            "0+",
            fields=TASK_IDS_STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        F(
            "StandbyTasksPendingRevocation",
            "[]TaskIds",
            "0+",
            fields=TASK_IDS_STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        F(
            "WarmupTasksPendingRevocation",
            "[]TaskIds",
            "0+",
            fields=TASK_IDS_STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
    ),
)


STREAMS_GROUP_TOPOLOGY_KEY = Message(
    "StreamsGroupTopologyKey",
    "0",
    "none",
    (F("GroupId", "string", "0"),),
)


TOPIC_CONFIG_STREAMS_GROUP_TOPOLOGY_VALUE = (
    F("key", "string", "0+"),
    F("value", "string", "0+"),
)

TOPIC_INFO_STREAMS_GROUP_TOPOLOGY_VALUE = (
    F("Name", "string", "0+"),
    F("Partitions", "int32", "0+"),
    F("ReplicationFactor", "int16", "0+"),
    F("TopicConfigs", "[]TopicConfig", "0+", fields=TOPIC_CONFIG_STREAMS_GROUP_TOPOLOGY_VALUE),
)

STREAMS_GROUP_TOPOLOGY_VALUE = Message(
    "StreamsGroupTopologyValue",
    "0",
    "0+",
    (
        F("Epoch", "int32", "0+"),
        F(
            "Subtopologies",
            "[]Subtopology",
            "0+",
            fields=(
                F("SubtopologyId", "string", "0+"),
                F("SourceTopics", "[]string", "0+"),
                F("SourceTopicRegex", "[]string", "0+"),
                F(
                    "StateChangelogTopics",
                    "[]TopicInfo",
                    "0+",
                    fields=TOPIC_INFO_STREAMS_GROUP_TOPOLOGY_VALUE,
                ),
                F("RepartitionSinkTopics", "[]string", "0+"),
                F(
                    "RepartitionSourceTopics",
                    "[]TopicInfo",
                    "0+",
                    fields=TOPIC_INFO_STREAMS_GROUP_TOPOLOGY_VALUE,
                ),
                F(
                    "CopartitionGroups",
                    "[]CopartitionGroup",
                    "0+",
                    fields=(
                        F("SourceTopics", "[]int16", "0+"),
                        F("SourceTopicRegex", "[]int16", "0+"),
                        F("RepartitionSourceTopics", "[]int16", "0+"),
                    ),
                ),
            ),
        ),
    ),
)


TOPIC_PARTITIONS_INFO_SHARE_GROUP_PARTITION_METADATA_VALUE_3_9 = (
    F("TopicId", "uuid", "0+"),
    F("TopicName", "string", "0+"),
    F("Partitions", "[]int32", "0+"),
)

TOPIC_INFO_SHARE_GROUP_PARTITION_METADATA_VALUE_3_9 = (
    F("TopicId", "uuid", "0+"),
    F("TopicName", "string", "0+"),
)

SHARE_GROUP_PARTITION_METADATA_VALUE_3_9 = Message(
    "ShareGroupPartitionMetadataValue",
    "0",
    "0+",
    (
        F(
            "InitializedTopics",
            "[]TopicPartitionsInfo",
            "0+",
            fields=TOPIC_PARTITIONS_INFO_SHARE_GROUP_PARTITION_METADATA_VALUE_3_9,
        ),
        F(
            "DeletingTopics",
            "[]TopicInfo",
            "0+",
            fields=TOPIC_INFO_SHARE_GROUP_PARTITION_METADATA_VALUE_3_9,
        ),
    ),
)


CONSUMER_PROTOCOL_SUBSCRIPTION = Message(
    "ConsumerProtocolSubscription",
    "0-3",
    "none",
    (
        F("Topics", "[]string", "0+"),
        F("UserData", "bytes", "0+", nullable="0+", default=None),
        F(
            "OwnedPartitions",
            "[]TopicPartition",
            "1+",
            fields=(
                F("Topic", "string", "1+"),
                F("Partitions", "[]int32", "1+"),
            ),
        ),
        F("GenerationId", "int32", "2+", default=-1),
        F("RackId", "string", "3+", nullable="3+", default=None),
    ),
)


CONSUMER_PROTOCOL_ASSIGNMENT = Message(
    "ConsumerProtocolAssignment",
    "0-3",
    "none",
    (
        F(
            "AssignedPartitions",
            "[]TopicPartition",
            "0+",
            fields=(
                F("Topic", "string", "0+"),
                F("Partitions", "[]int32", "0+"),
            ),
        ),
        F("UserData", "bytes", "0+", nullable="0+", default=None),
    ),
)


# Layouts of in-development values before Kafka 4.1 changed them incompatibly (the trunk
# snapshot these tables were first written from, 4.1.0-SNAPSHOT of Dec 2024): no
# MetadataHash (KIP-1101) in the share and streams group metadata values, and no
# InitializingTopics in ShareGroupStatePartitionMetadataValue. Read as fallbacks.
SHARE_GROUP_METADATA_VALUE_4_0 = Message(
    "ShareGroupMetadataValue",
    "0",
    "0+",
    (F("Epoch", "int32", "0+"),),
)

STREAMS_GROUP_METADATA_VALUE_4_0 = Message(
    "StreamsGroupMetadataValue",
    "0",
    "0+",
    (F("Epoch", "int32", "0+"),),
)

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE_4_0 = Message(
    "ShareGroupStatePartitionMetadataValue",
    "0",
    "0+",
    (
        F(
            "InitializedTopics",
            "[]TopicPartitionsInfo",
            "0+",
            fields=TOPIC_PARTITIONS_INFO_SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
        ),
        F(
            "DeletingTopics",
            "[]TopicInfo",
            "0+",
            fields=TOPIC_INFO_SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
        ),
    ),
)
