# Slot derivation from free text, in English and Chinese.
package memgate_test

import data.memgate_config as config

import data.memgate

test_publish_constraint_english_lands_in_publish_slot if {
	d := decide(text("Auto-publish is disabled for project Alpha.", " auto publish is disabled for project alpha "))
	d.layer == "policy"
	d.factType == "publish.auto"
	d.subjectId == "project-alpha"
	d.value == {"enabled": false}
}

test_publish_constraint_chinese_lands_in_same_slot if {
	d := decide(text("项目 alpha 当前阶段禁止自动发布", " 项目 alpha 当前阶段禁止自动发布 "))
	d.layer == "policy"
	d.factType == "publish.auto"
	d.subjectId == "project-alpha"
	d.value == {"enabled": false}
}

test_publish_rephrased_enabled if {
	d := decide(text("Turn on automatic publishing for project alpha", " turn on automatic publishing for project alpha "))
	d.factType == "publish.auto"
	d.value == {"enabled": true}
}

test_negation_wins_over_affirmation if {
	d := decide(text("项目alpha不允许自动发布", " 项目 alpha 不允许自动发布 "))
	d.value == {"enabled": false}
}

test_confirmation_topic_defaults_to_required if {
	d := decide(text("Production deploys for project beta need human approval", " production deploys for project beta need human approval "))
	d.factType == "confirm.manual"
	d.subjectId == "project-beta"
	d.value == {"required": true}
}

test_data_modification_topic if {
	d := decide(text("The agent must not modify the billing tables", " the agent must not modify the billing tables "))
	d.layer == "policy"
	d.factType == "data.modify"
	d.value == {"allowed": false}
}

test_permission_boundary_chinese if {
	d := decide(text("agent 对项目 gamma 的生产库没有访问权限", " agent 对项目 gamma 的生产库没有访问权限 "))
	d.factType == "access.scope"
	d.subjectId == "project-gamma"
	d.value == {"allowed": false}
}

test_state_phase_from_alpha_project_form if {
	d := decide(text("The alpha project is now in phase 3", " the alpha project is now in phase 3 "))
	d.layer == "state"
	d.factType == "status.phase"
	d.subjectId == "project-alpha"
	d.value == null
}

test_subject_stopwords_name_no_project if {
	d := decide(text("This project has a deadline on Friday", " this project has a deadline on friday "))
	d.factType == "status.deadline"
	d.subjectId == ""
}

test_project_before_alpha_project_form if {
	d := decide(text("for project delta the owner is Wang", " for project delta the owner is wang "))
	d.subjectId == "project-delta"
	d.factType == "status.owner"
}

test_language_preference_slot if {
	d := decide(text("Please reply in Chinese from now on", " please reply in chinese from now on "))
	d.layer == "preference"
	d.factType == "preference.language"
}

test_preference_hint_has_no_slot if {
	d := decide(text("I prefer short answers with code first", " i prefer short answers with code first "))
	d.layer == "preference"
	d.factType == ""
}

test_checkpoint_hint_chinese if {
	d := decide(text("迁移任务已完成第三步，下一步是校验数据", " 迁移任务已完成第三步下一步是校验数据 "))
	d.layer == "checkpoint"
	d.factType == ""
}

test_plain_text_is_knowledge if {
	d := decide(text("The Berlin office opens at 9", " the berlin office opens at 9 "))
	d.layer == "knowledge"
	d.factType == ""
	d.subjectId == ""
}

test_writer_fact_type_wins_layer_only_rises if {
	d := decide(write({
		"layer": "state", "factType": "release.version", "subjectId": "project-alpha",
		"summary": "auto publish", "text_norm": " auto publish ",
	}))
	d.layer == "policy"
	d.factType == "release.version"
	d2 := decide(write({
		"layer": "policy", "factType": "release.version", "subjectId": "project-alpha",
		"summary": "version 3", "text_norm": " version 3 ",
	}))
	d2.layer == "policy"
}

test_declared_state_with_a_policy_topic_lands_in_the_policy_slot if {
	d := decide(write({"layer": "state", "subjectId": "project-alpha",
		"summary": "auto-publish is allowed for this project", "text_norm": " auto publish is allowed for this project "}))
	d.layer == "policy"
	d.factType == "publish.auto"
	configured(d)
}

test_writer_value_is_not_replaced if {
	d := decide(write({
		"layer": "policy", "factType": "publish.auto", "summary": "auto-publish is off",
		"text_norm": " auto publish is off ", "value": {"enabled": false},
	}))
	d.value == null
}

test_affects_of_topic_and_layer if {
	d1 := decide(text("auto-publish is disabled", " auto publish is disabled "))
	d1.affects == ["publishing", "release pipeline"]
	d2 := decide(text("The Berlin office opens at 9", " the berlin office opens at 9 "))
	d2.affects == ["answers that draw on this knowledge"]
}

# Every topic is ranked exactly once, so the text's topic is never a tie,
# and the policy topics are ranked in the same order.
test_topics_are_ranked_once if {
	ranked := config.features.first.topic
	count(ranked) == count(config.topics)
	{t | some t in ranked} == object.keys(config.topics)
	config.features.first.policy_topic == [t | some t in ranked; config.topics[t].layer == "policy"]
}

# Every topic has keywords, and every keyword list names a topic or a known feature.
test_keyword_lists_match_topics if {
	every name, _ in config.topics {
		count(config.features.keywords[name]) > 0
	}
	known := object.keys(config.topics) | {"negation", "affirmation", "norm.strong", "norm.weak", "norm.bare",
		"subject.agent", "condition", "action", "style", "permission", "status.change", "status.shift",
		"status.entity", "poisoning", "injection", "hedge", "preference.verb", "action.soft", "intent"}
	every name, _ in config.features.keywords {
		name in known
	}
}
